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

-- Who settled the operation by hand (null when a Confirm or a reconciler settled it).
ALTER TABLE operations ADD COLUMN settled_by text;
-- When compaction dropped the bodies and old events of this operation (null: not compacted).
ALTER TABLE operations ADD COLUMN compacted_at timestamptz;

-- What compaction and hard delete scan: settled, not yet compacted, oldest settlement first.
CREATE INDEX operations_compactable_idx ON operations (settled_at)
    WHERE compacted_at IS NULL AND status IN ('succeeded', 'failed');
-- What "List failed" pages through, oldest settlement first.
CREATE INDEX operations_failed_idx ON operations (settled_at, operation_key) WHERE status = 'failed';

-- A retryable failure (compacted, or settled by hand as "did not happen") that is reserved again
-- is a live operation once more: it leaves the compacted set (so its next settlement is compacted
-- in turn) and no longer names the person who settled the previous attempt.
CREATE FUNCTION operations_reset_operator_marks() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    NEW.compacted_at := NULL;
    NEW.settled_by := NULL;
    RETURN NEW;
END $$;
CREATE TRIGGER operations_reset_operator_marks_on_retry
    BEFORE UPDATE ON operations
    FOR EACH ROW WHEN (NEW.status = 'reserved' AND (OLD.compacted_at IS NOT NULL OR OLD.settled_by IS NOT NULL))
    EXECUTE FUNCTION operations_reset_operator_marks();

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

INSERT INTO schema_migrations (version, name) VALUES (8, 'operator') ON CONFLICT (version) DO NOTHING;
