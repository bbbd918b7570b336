-- The queue's virtual time: the smallest tag among its pending, tagged tasks that are claimable
-- now (one probe of queue_tasks_tag_idx; tasks in a retry backoff that sit in front are stepped
-- over). When none is claimable, the largest last tag of its groups (everything tagged so far was
-- handed out, so a group that starts now starts level with the latest). 0 for a new queue.
-- plpgsql, not sql: a SQL-language function with a SET clause (every function gets search_path, see
-- schema/security/function_security.sql) is never inlined, and the statement that calls it plans
-- its body again on every execution (0.13 ms for this body, measured with pgbench: BENCHMARKS.md,
-- "planned SQL functions"); plpgsql keeps the plan for the connection.
CREATE OR REPLACE FUNCTION queue_vtime(p_queue text) RETURNS double precision
LANGUAGE plpgsql STABLE
SET search_path FROM CURRENT
-- One plan per connection, and it must read the head of queue_tasks_tag_idx whatever the queue: a
-- generic plan made with the planner's defaults may instead read every ready task of the queue
-- through queue_tasks_ready_idx and sort them (seen: 150 ms per enqueue at 570,000 pending). With
-- sorts, sequential scans, hash and merge joins priced out, the only plan left is the ordered index
-- scan that stops at the first row (the same settings as queue_claim's fast path).
SET plan_cache_mode = force_generic_plan
SET enable_sort = off
SET enable_seqscan = off
SET enable_hashjoin = off
SET enable_mergejoin = off
SET jit = off
AS $$
BEGIN
    RETURN coalesce(
        (SELECT t.vtag FROM queue_tasks t
          WHERE t.queue = p_queue AND t.status = 'pending' AND t.vtag IS NOT NULL AND t.run_at <= queue_now()
          ORDER BY t.vtag, t.id LIMIT 1),
        (SELECT max(g.last_tag) FROM queue_group_tags g WHERE g.queue = p_queue),
        0);
END $$;
