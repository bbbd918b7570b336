-- n8n-nodes-operation-ledger, migration 0003: Reconcile Unknown.
--
-- Applied once, in order, by the nodes' migrator (when the credential allows it) or by
-- schema/apply.sql with psql (see the README, "Applying the schema"). Its functions are in
-- schema/functions/.
--
-- Reconciling never guesses. A reconciler claims operations whose outcome is unknown (or whose
-- reservation lease expired without a confirmation) once they have been unknown for longer than
-- a settle delay, asks the target system, and reports one of:
--   happened      -> succeeded (with the target's reference)
--   not_happened  -> failed, retryable (trusted only because the claim waited out the settle delay)
--   still_unknown -> unknown again, next check after a capped exponential backoff;
--                    after max_checks checks -> review (a human decides; never deleted)
-- A claim is short (claim_seconds) and carries its own token, so two reconcilers running at once
-- never check the same operation, and a reconciler whose claim lapsed cannot resolve it.

SET search_path TO :"schema";

CREATE INDEX operations_unknown_since_idx ON operations (unknown_since) WHERE status = 'unknown';

INSERT INTO ol_schema_migrations (version, name) VALUES (3, 'reconcile') ON CONFLICT (version) DO NOTHING;
