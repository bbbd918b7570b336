-- n8n-nodes-operation-ledger, migration 0005: the settle window belongs to the operation, and no
-- lease or claim token is readable at rest.
--
-- Applied once, in order, by the nodes' migrator (when the credential allows it) or by
-- schema/apply.sql with psql (see the README, "Applying the schema").
--
-- 1. Settle window. settle_seconds (given to Reserve Operation, 1 .. 30 days, default 120) is stored
--    with the operation. When the operation becomes unknown, settle_until is set:
--      confirmed unknown      -> ledger_now() + settle_seconds
--      lease expired          -> lease_expires_at + settle_seconds (the holder may still have been
--                                sending until its lease ended)
--    Reconcile Unknown claims an operation only after settle_until, records claimed_at, and
--    reconcile_resolve() refuses "did not happen" from a claim made before settle_until
--    (result refused_early). Existing unknown rows get the default window from the later of
--    unknown_since and lease_expires_at.
-- 2. Tokens at rest. Lease and claim tokens are stored only as SHA-256 over their 16 bytes
--    (ledger_token_hash()); the holder presents the token and the functions compare hashes. The
--    event log keeps the hash (to tell holders apart) and stale_confirmation events no longer
--    carry the live holder's token. The columns are converted in place (ALTER COLUMN ... TYPE
--    rewrites the tables, so the old token values are not left in live pages; the append-only
--    trigger does not fire for DDL).

SET search_path TO :"schema";

-- Written to be safe to run again on a schema that already has these changes (each step checks).
DO $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM information_schema.columns
                    WHERE table_schema = current_schema() AND table_name = 'operations' AND column_name = 'settle_until') THEN
        ALTER TABLE operations
            ADD COLUMN settle_seconds integer NOT NULL DEFAULT 120 CHECK (settle_seconds BETWEEN 1 AND 2592000),
            ADD COLUMN settle_until timestamptz,
            ADD COLUMN claimed_at timestamptz;
        UPDATE operations
           SET settle_until = greatest(coalesce(unknown_since, now()), coalesce(lease_expires_at, '-infinity')) + interval '120 seconds'
         WHERE status = 'unknown';
    END IF;
    IF EXISTS (SELECT 1 FROM information_schema.columns
                WHERE table_schema = current_schema() AND table_name = 'operations' AND column_name = 'lease_token') THEN
        ALTER TABLE operations
            ALTER COLUMN lease_token TYPE bytea USING sha256(uuid_send(lease_token)),
            ALTER COLUMN claim_token TYPE bytea USING sha256(uuid_send(claim_token));
        ALTER TABLE operations RENAME COLUMN lease_token TO lease_token_hash;
        ALTER TABLE operations RENAME COLUMN claim_token TO claim_token_hash;
    END IF;
    IF EXISTS (SELECT 1 FROM information_schema.columns
                WHERE table_schema = current_schema() AND table_name = 'operation_events' AND column_name = 'lease_token') THEN
        ALTER TABLE operation_events
            ALTER COLUMN lease_token TYPE bytea USING sha256(uuid_send(lease_token)),
            ALTER COLUMN detail TYPE jsonb USING detail - 'holderToken';
        ALTER TABLE operation_events RENAME COLUMN lease_token TO lease_token_hash;
    END IF;
END $$;

-- append_event() now takes the token's hash (bytea); the uuid form wrote the token itself.
DROP FUNCTION IF EXISTS append_event(text, text, text, text, integer, uuid, jsonb, integer, jsonb);

INSERT INTO schema_migrations (version, name) VALUES (5, 'ledger_truth') ON CONFLICT (version) DO NOTHING;
