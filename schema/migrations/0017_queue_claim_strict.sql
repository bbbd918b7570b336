-- n8n-nodes-operation-ledger, migration 0017: strict priority groups for queue_claim.
-- docs/queue.md, "Strict priority", has the rule. No table changes: queue_claim gains a seventh
-- argument (p_strict, default NULL), so the six-argument function goes (the function set applied
-- after the migrations creates the new one; a six-argument call resolves to it through the default;
-- re-run the role scripts after an upgrade, docs/security.md).

SET search_path TO :"schema";

DROP FUNCTION IF EXISTS queue_claim(text, text[], integer[], integer, double precision, double precision);

INSERT INTO ol_schema_migrations (version, name) VALUES (17, 'queue_claim_strict') ON CONFLICT (version) DO NOTHING;
