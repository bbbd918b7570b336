-- n8n-nodes-operation-ledger, migration 0008: operator tools (look up, settle by hand, retention).
--
-- Applied once, in order, by the nodes' migrator (when the credential allows it) or by
-- schema/apply.sql with psql (see the README, "Applying the schema"). Its functions are in
-- schema/functions/ledger/ops_*.sql; docs/operations.md explains them and the grants they need.
--
-- New transitions (each appends an event):
--   unknown | review --settled by hand: happened------> succeeded (external reference, who, why)
--   unknown | review --settled by hand: did not happen> failed, retryable (who, why)
-- Retention, only for operations settled (succeeded or failed) more than N days ago:
--   compaction drops the request body (kept for retryable failures, which may be retried), the
--   response body and the events older than N days; it keeps the key, status, fingerprint,
--   attempt, idempotency key and external reference, so a late retry is still answered from the
--   ledger (Already Succeeded, or Conflict for a different request).
--   hard delete removes the row and its events: a later Reserve of that key is a NEW operation
--   and runs the write again. Only ever run on an explicit choice (see docs/operations.md).

SET search_path TO :"schema";

-- Who settled the operation by hand, and which attempt that decision was about: a retryable
-- failure that is reserved again gets a new attempt number, so the mark no longer applies to it
-- (nothing needs to clear it). NULL when a Confirm or a reconciler settled it.
ALTER TABLE operations ADD COLUMN IF NOT EXISTS settled_by text;
ALTER TABLE operations ADD COLUMN IF NOT EXISTS settled_by_attempt integer;
-- Compaction: when it dropped the bodies and old events, and of which attempt. A compacted
-- retryable failure that is retried is live again (attempt + 1) and compacted anew once settled.
ALTER TABLE operations ADD COLUMN IF NOT EXISTS compacted_at timestamptz;
ALTER TABLE operations ADD COLUMN IF NOT EXISTS compacted_attempt integer;

-- What compaction scans: settled, this attempt not compacted yet, oldest settlement first.
CREATE INDEX IF NOT EXISTS operations_compactable_idx ON operations (settled_at)
    WHERE status IN ('succeeded', 'failed') AND compacted_attempt IS DISTINCT FROM attempt;
-- What "List failed" pages through, oldest settlement first.
CREATE INDEX IF NOT EXISTS operations_failed_idx ON operations (settled_at, operation_key) WHERE status = 'failed';

-- The event log stays append-only: UPDATE is always refused, and DELETE only inside the retention
-- functions (ops_compact_batch, ops_hard_delete_batch), which switch the transaction-local
-- setting n8n_operation_ledger.retention on around their own DELETE and off again. A role still
-- needs the DELETE privilege on operation_events for it (only the operator role has it).
CREATE OR REPLACE FUNCTION operation_events_append_only() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'DELETE' AND current_setting('n8n_operation_ledger.retention', true) = 'on' THEN
        RETURN OLD;
    END IF;
    RAISE EXCEPTION 'operation_events is append-only (% refused)', TG_OP;
END $$;

INSERT INTO ol_schema_migrations (version, name) VALUES (8, 'operator') ON CONFLICT (version) DO NOTHING;
