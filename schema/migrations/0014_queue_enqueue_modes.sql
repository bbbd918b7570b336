-- n8n-nodes-operation-ledger: Enqueue's dedupe-key modes: replace a pending
-- task's payload (and run time), throttle and debounce by key. The rules are in
-- schema/functions/queue/queue_enqueue.sql and docs/queue.md ("Replace by dedupe key", "Throttle and
-- debounce"); the outcomes are ENQUEUE_OUTCOMES in src/queue/states.ts.

SET search_path TO :"schema";

-- A debounced enqueue that finds the key's task already processing enqueues a new task: the key
-- moves off the running task (dedupe_key null) so the unique dedupe index takes the new one; the
-- running task keeps it here, for inspection only (nothing reads it to decide).
ALTER TABLE queue_tasks ADD COLUMN IF NOT EXISTS superseded_dedupe_key text;

-- Throttle: one row per (queue, dedupe key) ever throttled, the window the last admitted enqueue
-- opened (from its enqueue time, queue_now(), to that plus the window). Kept apart from the tasks so
-- that a task which finished, was archived or purged still closes its window. queue_purge deletes
-- rows whose window has ended.
CREATE TABLE IF NOT EXISTS queue_throttle_windows (
    queue             text NOT NULL,
    dedupe_key        text NOT NULL,
    task_id           bigint,
    started_at        timestamptz NOT NULL,
    ends_at           timestamptz NOT NULL,
    PRIMARY KEY (queue, dedupe_key)
);
CREATE INDEX IF NOT EXISTS queue_throttle_windows_ends_idx ON queue_throttle_windows (ends_at);

-- queue_enqueue answers two more columns (outcome, window_ends_at): a new return type.
DROP FUNCTION IF EXISTS queue_enqueue(jsonb);

INSERT INTO ol_schema_migrations (version, name) VALUES (14, 'queue_enqueue_modes') ON CONFLICT (version) DO NOTHING;
