-- n8n-nodes-operation-ledger, migration 0019: each serial key's head, found in one index entry.
-- queue_serial_promote asks, for a key whose head just left, "is another task of the key not
-- waiting?" (a head: pending, processing, retrying, or dead and not yet purged). Through
-- queue_tasks_serial_idx that read every task of the key, all of them waiting behind the head, so
-- draining a key's backlog of n tasks read about n²/2 entries (a complete of the head 0.95 ms with
-- 200 waiting, 5.8 ms with 20,000). This index holds only the tasks of a key that are not waiting:
-- the head and the key's dead tasks, whatever the backlog.

SET search_path TO :"schema";

CREATE INDEX IF NOT EXISTS queue_tasks_serial_head_idx ON queue_tasks (queue, serial_key)
    WHERE serial_key IS NOT NULL AND NOT serial_wait;

INSERT INTO ol_schema_migrations (version, name) VALUES (19, 'queue_serial_heads') ON CONFLICT (version) DO NOTHING;
