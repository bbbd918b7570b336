-- n8n-nodes-operation-ledger, migration 0018: serial keys, one task at a time per key in enqueue
-- order. docs/queue.md, "One at a time per key", has the rule; the functions that keep it
-- are queue_enqueue (a task behind a live one of its key is stored blocked), queue_serial_promote
-- (called by every statement that moves a key's head out of queue_tasks) and queue_serial_lock.
--
--   queue_tasks.serial_key   null = not serialised. Kept for the task's whole life (never changed).
--   queue_tasks.serial_wait  true = another task of its key is ahead (its head): the task is stored
--                            pending but untagged and out of every index a claim, the tagging of due
--                            tasks, the aging sweep or the trigger's due check reads (the two partial
--                            indexes below), so no claim sees it. The key's head is its one row with
--                            serial_wait false; the head holds the key while it is in queue_tasks
--                            (pending, processing, retrying or dead), and when it leaves (completed,
--                            cancelled, settled complete by id, purged) its oldest blocked task (id
--                            order = enqueue order) becomes the head in the same transaction.

SET search_path TO :"schema";

ALTER TABLE queue_tasks ADD COLUMN IF NOT EXISTS serial_key text CHECK (octet_length(serial_key) BETWEEN 1 AND 512);
ALTER TABLE queue_tasks ADD COLUMN IF NOT EXISTS serial_wait boolean NOT NULL DEFAULT false;
ALTER TABLE queue_tasks_archive ADD COLUMN IF NOT EXISTS serial_key text;
-- A blocked task is untagged (a tag would let the claim's tag index see it) and has a key. It may
-- be dead: an operator can fail a blocked task by id; it then waits its turn as a dead head.
ALTER TABLE queue_tasks DROP CONSTRAINT IF EXISTS queue_tasks_serial_wait_check;
ALTER TABLE queue_tasks ADD CONSTRAINT queue_tasks_serial_wait_check
    CHECK (NOT serial_wait OR (serial_key IS NOT NULL AND vtag IS NULL AND status IN ('pending', 'dead')));

-- A key's tasks in enqueue order: is there one ahead (enqueue), which is next (promotion).
CREATE INDEX IF NOT EXISTS queue_tasks_serial_idx ON queue_tasks (queue, serial_key, id) WHERE serial_key IS NOT NULL;

-- The ready index and the untagged index leave blocked tasks out (same names: the functions and the
-- upgrade tests refer to them). Every query that reads them says AND NOT serial_wait.
DROP INDEX IF EXISTS queue_tasks_ready_idx;
CREATE INDEX queue_tasks_ready_idx ON queue_tasks (queue, priority_group, run_at, id)
    WHERE status = 'pending' AND NOT serial_wait;
DROP INDEX IF EXISTS queue_tasks_untagged_group_idx;
CREATE INDEX queue_tasks_untagged_group_idx ON queue_tasks (queue, priority_group, run_at, id)
    WHERE status = 'pending' AND vtag IS NULL AND NOT serial_wait;

INSERT INTO ol_schema_migrations (version, name) VALUES (18, 'queue_serial_keys') ON CONFLICT (version) DO NOTHING;
