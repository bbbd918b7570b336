-- The advisory lock key of serial key p_key in p_queue (a bigint from the schema, the queue and the
-- key; two keys sharing a lock key only make one wait for the other, never run two at once). Held
-- exclusive until the transaction ends by every statement that adds a task to the key (queue_enqueue)
-- or moves its head out of queue_tasks (queue_serial_hold), so "is a task of this key ahead?" and
-- "which task is next?" are never decided by two transactions at once. Why an advisory lock and not a
-- row per key: nothing to create, clean up or vacuum per key, and a wait on it is bounded by
-- lock_timeout like a row lock. Not an entry point.
CREATE OR REPLACE FUNCTION queue_serial_lock(p_queue text, p_key text) RETURNS bigint
LANGUAGE plpgsql STABLE
SET search_path FROM CURRENT
AS $$
BEGIN
    RETURN hashtextextended('n8n-nodes-operation-ledger:serial:' || current_schema() || '/' || p_queue || chr(1) || p_key, 0);
END $$;
