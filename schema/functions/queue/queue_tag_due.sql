-- Tag the untagged pending tasks of p_queue's groups p_groups that are due (run_at <= p_now), FIFO
-- by run_at within a group, as if enqueued now. Untagged tasks are those enqueued with a delay
-- (tagged when due, so a group's delayed work neither holds its place while it waits nor jumps the
-- queue when due), those enqueued inside a caller's longer transaction, those whose group tag row
-- was held by another transaction at enqueue (queue_enqueue), and retries after a backoff
-- (queue_fail). Called by queue_claim (queue_claim_full) when its probe finds one in its groups.
-- Only the claim's own groups: another group's untagged backlog is tagged by the claims that list
-- that group, so it never uses up this claim's share (tagged here FIFO across every group, 10,000
-- at a time, it would leave the claim empty while its own tasks waited).
-- At most 10,000 tasks per call, shared out evenly among the groups (rounded up). Never waits: task
-- rows another transaction holds are skipped while the tasks are chosen (FOR UPDATE SKIP LOCKED in
-- each group's ordered scan of queue_tasks_untagged_group_idx), and so is a group whose tag row
-- another transaction holds (queue_take_tags); those stay untagged for a later claim. Returns the
-- number of tasks tagged.
CREATE OR REPLACE FUNCTION queue_tag_due(p_queue text, p_groups text[], p_now timestamptz) RETURNS integer
LANGUAGE plpgsql
SET search_path FROM CURRENT
-- The tagging UPDATE finds each claimed id by primary key. PL/pgSQL keeps a statement's plan for
-- the connection, and one made while the table was small hashed the ids against a scan of
-- queue_tasks_untagged_group_idx: every untagged task of every queue, once per group per call, for
-- as long as the connection lived (30,000 untagged tasks: 15 ms a group). Scans, hash and merge
-- joins are priced out (the candidate read above is an index scan either way), and the UPDATE tests
-- status || '' so that no partial index's predicate follows from it.
SET enable_seqscan = off
-- JIT off: a statement whose only path is a scan would carry the priced-out cost and be compiled on every call.
SET jit = off
SET enable_hashjoin = off
SET enable_mergejoin = off
AS $$
DECLARE
    r record;
    v_base double precision;
    v_step double precision;
    v_n integer := 0;
    v_vtime double precision;
    v_each integer := ceil(10000.0 / greatest(coalesce(cardinality(p_groups), 0), 1))::integer;
BEGIN
    v_vtime := queue_vtime(p_queue);
    FOR r IN
        SELECT g.name AS g, array_agg(d.id ORDER BY d.run_at, d.id) AS ids
          FROM (SELECT DISTINCT x AS name FROM unnest(p_groups) AS x) g
         CROSS JOIN LATERAL (
                SELECT t.id, t.run_at FROM queue_tasks t
                 WHERE t.queue = p_queue AND t.priority_group = g.name AND t.status = 'pending' AND t.vtag IS NULL AND NOT t.serial_wait
                   AND t.run_at <= p_now
                 ORDER BY t.run_at, t.id
                 LIMIT v_each
                   FOR UPDATE SKIP LOCKED) d
         GROUP BY g.name
         ORDER BY g.name
    LOOP
        SELECT x.base, x.step INTO v_base, v_step FROM queue_take_tags(p_queue, r.g, cardinality(r.ids), v_vtime) x;
        CONTINUE WHEN v_base IS NULL;
        UPDATE queue_tasks t SET vtag = round((v_base + v_step * u.o) * 1e6) / 1e6
          FROM unnest(r.ids) WITH ORDINALITY AS u(tid, o)
         WHERE t.id = u.tid AND t.status || '' = 'pending' AND t.vtag IS NULL AND NOT t.serial_wait;
        v_n := v_n + cardinality(r.ids);
    END LOOP;
    RETURN v_n;
END $$;
