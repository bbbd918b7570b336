-- The queue's virtual time: the smallest tag among its pending, tagged tasks that are claimable
-- now (one probe of queue_tasks_tag_idx; tasks in a retry backoff that sit in front are stepped
-- over). When none is claimable, the largest last tag of its groups (everything tagged so far was
-- handed out, so a group that starts now starts level with the latest). 0 for a new queue.
CREATE OR REPLACE FUNCTION queue_vtime(p_queue text) RETURNS double precision
LANGUAGE sql STABLE
SET search_path FROM CURRENT
AS $$
    SELECT coalesce(
        (SELECT t.vtag FROM queue_tasks t
          WHERE t.queue = p_queue AND t.status = 'pending' AND t.vtag IS NOT NULL AND t.run_at <= now()
          ORDER BY t.vtag, t.id LIMIT 1),
        (SELECT max(g.last_tag) FROM queue_group_tags g WHERE g.queue = p_queue),
        0)
$$;
