-- The advisory lock key that orders claims against pauses of p_queue (a bigint from the schema and
-- the queue name; two queues sharing a key only make a pause of one wait for claims of the other).
-- A claim holds it shared until its transaction ends (queue_claim); queue_pause takes it exclusive,
-- so it waits for the claims in flight to commit, and every claim that starts after the pause
-- committed reads the pause. Not an entry point.
CREATE OR REPLACE FUNCTION queue_pause_lock(p_queue text) RETURNS bigint
LANGUAGE plpgsql STABLE
SET search_path FROM CURRENT
AS $$
BEGIN
    RETURN hashtextextended('n8n-nodes-operation-ledger:pause:' || current_schema() || '/' || p_queue, 0);
END $$;
