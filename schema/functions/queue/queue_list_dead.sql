-- The most recent dead tasks of a queue (for a dead-letter report).
CREATE OR REPLACE FUNCTION queue_list_dead(p_queue text, p_limit integer)
RETURNS SETOF queue_tasks
LANGUAGE sql STABLE
SET search_path FROM CURRENT
AS $$
    SELECT t.* FROM queue_tasks t
     WHERE t.queue = p_queue AND t.status = 'dead'
     ORDER BY t.dead_at DESC, t.id DESC
     LIMIT greatest(coalesce(p_limit, 10), 0)
$$;
