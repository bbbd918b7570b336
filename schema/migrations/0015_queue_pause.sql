-- n8n-nodes-operation-ledger, migration 0015: pause and resume a queue or one of its priority
-- groups. docs/queue.md, "Pause and resume", has the rules; the functions are
-- queue_pause, queue_resume and queue_paused_groups.
--
--   queue_pauses        one row per pause in force: (queue, priority_group), priority_group '' = the
--                       whole queue (a group name always holds a non-space character, so '' is never
--                       a group). Who paused (paused_by), why (reason) and when (paused_at, the queue
--                       clock). A claim reads it with one probe of the primary key; Resume deletes the row.
--   queue_pause_events  every pause and resume that changed something, append-only by use (only
--                       queue_pause and queue_resume write it): the record of who stopped or
--                       restarted what, and why, after the pause row is gone.

SET search_path TO :"schema";

CREATE TABLE IF NOT EXISTS queue_pauses (
    queue             text NOT NULL,
    priority_group    text NOT NULL,
    paused_at         timestamptz NOT NULL,
    paused_by         text CHECK (octet_length(paused_by) <= 1000),
    reason            text CHECK (octet_length(reason) <= 10000),
    PRIMARY KEY (queue, priority_group)
);

CREATE TABLE IF NOT EXISTS queue_pause_events (
    id                bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    queue             text NOT NULL,
    priority_group    text NOT NULL,
    action            text NOT NULL CHECK (action IN ('paused', 'resumed')),
    at                timestamptz NOT NULL,
    by_whom           text CHECK (octet_length(by_whom) <= 1000),
    reason            text CHECK (octet_length(reason) <= 10000)
);
CREATE INDEX IF NOT EXISTS queue_pause_events_queue_idx ON queue_pause_events (queue, at);

-- queue_health gains a column (pauses): its row type changes, so the old function goes (the function
-- set applied after the migrations creates the new one; re-run the role scripts after an upgrade,
-- docs/security.md).
DROP FUNCTION IF EXISTS queue_health(text);

INSERT INTO ol_schema_migrations (version, name) VALUES (15, 'queue_pause') ON CONFLICT (version) DO NOTHING;
