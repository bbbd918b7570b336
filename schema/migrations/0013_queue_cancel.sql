-- n8n-nodes-operation-ledger, migration 0013: cancel a queued task.
--
-- Cancel: a waiting task (pending, also a retry waiting out its delay) ends cancelled at
-- once and moves to the archive; a task being worked on is marked cancel-requested and ends
-- cancelled at its holder's next settle or lease extension (or when its lease expires). Either way
-- the end is recorded with who asked (cancelled_by) and why (cancel_reason), as a dead task keeps its
-- last error. The closed lists are src/queue/states.ts (ARCHIVE_STATES, LEASE_ENDS);
-- test/integration/states.test.ts checks them against the CHECK constraints below.

SET search_path TO :"schema";

-- A cancel-requested task stays processing under its lease; its dedupe key moves to
-- cancelled_dedupe_key so the key is free for a new enqueue at once (the archive row gets it back).
ALTER TABLE queue_tasks ADD COLUMN IF NOT EXISTS cancel_requested_at timestamptz;
ALTER TABLE queue_tasks ADD COLUMN IF NOT EXISTS cancel_reason text CHECK (octet_length(cancel_reason) <= 10000);
ALTER TABLE queue_tasks ADD COLUMN IF NOT EXISTS cancelled_by text CHECK (octet_length(cancelled_by) <= 200);
ALTER TABLE queue_tasks ADD COLUMN IF NOT EXISTS cancelled_dedupe_key text;
ALTER TABLE queue_tasks DROP CONSTRAINT IF EXISTS queue_tasks_cancel_requested_check;
ALTER TABLE queue_tasks ADD CONSTRAINT queue_tasks_cancel_requested_check
    CHECK (cancel_requested_at IS NULL OR status = 'processing');

ALTER TABLE queue_tasks_archive ADD COLUMN IF NOT EXISTS cancel_reason text;
ALTER TABLE queue_tasks_archive ADD COLUMN IF NOT EXISTS cancelled_by text;
ALTER TABLE queue_tasks_archive DROP CONSTRAINT IF EXISTS queue_tasks_archive_status_check;
ALTER TABLE queue_tasks_archive ADD CONSTRAINT queue_tasks_archive_status_check
    CHECK (status IN ('succeeded', 'dead', 'cancelled'));

-- 'cancelled': the lease ended because the task was cancelled (its holder's settle or extension
-- found the cancel request, or the cancel found the lease already expired).
ALTER TABLE queue_tasks DROP CONSTRAINT IF EXISTS queue_tasks_lease_end_check;
ALTER TABLE queue_tasks ADD CONSTRAINT queue_tasks_lease_end_check
    CHECK (lease_end IN ('completed', 'failed', 'gave_up', 'released', 'expired', 'requeued', 'cancelled'));

INSERT INTO ol_schema_migrations (version, name) VALUES (13, 'queue_cancel') ON CONFLICT (version) DO NOTHING;
