-- The pauses in force for p_queue (queue_pause): the paused group names, '' standing for the whole
-- queue; null when nothing of the queue is paused (the common case, one probe of queue_pauses'
-- primary key). Read by the claim (queue_claim), the trigger's wake check (queue_wake_state,
-- queue_next_due) and Stats; not an entry point.
CREATE OR REPLACE FUNCTION queue_paused_groups(p_queue text) RETURNS text[]
LANGUAGE plpgsql STABLE
SET search_path FROM CURRENT
AS $$
BEGIN
    RETURN (SELECT array_agg(p.priority_group ORDER BY p.priority_group) FROM queue_pauses p WHERE p.queue = p_queue);
END $$;
