-- Tag the untagged pending tasks of p_queue that are due (run_at <= p_now), FIFO by run_at within a
-- group, as if enqueued now. Untagged tasks are those enqueued with a delay (tagged when due, so a
-- group's delayed work neither holds its place while it waits nor jumps the queue when due), those
-- enqueued inside a caller's longer transaction, and those whose group tag row was held by another
-- transaction at enqueue (queue_enqueue). Called by queue_claim when its probe finds one.
-- At most 10,000 tasks per call. Never waits: task rows another transaction holds are skipped, and
-- so is a group whose tag row another transaction holds (queue_take_tags); those stay untagged for
-- a later claim. Returns the number of tasks tagged.
CREATE OR REPLACE FUNCTION queue_tag_due(p_queue text, p_now timestamptz) RETURNS integer
LANGUAGE plpgsql
SET search_path FROM CURRENT
AS $$
DECLARE
    r record;
    v_base double precision;
    v_step double precision;
    v_n integer := 0;
    v_vtime double precision;
BEGIN
    v_vtime := queue_vtime(p_queue);
    FOR r IN
        WITH due AS (
            SELECT t.id, t.priority_group, t.run_at FROM queue_tasks t
             WHERE t.queue = p_queue AND t.status = 'pending' AND t.vtag IS NULL AND t.run_at <= p_now
             ORDER BY t.run_at, t.id
             LIMIT 10000
               FOR UPDATE SKIP LOCKED
        )
        SELECT d.priority_group AS g, array_agg(d.id ORDER BY d.run_at, d.id) AS ids
          FROM due d GROUP BY d.priority_group ORDER BY d.priority_group
    LOOP
        SELECT x.base, x.step INTO v_base, v_step FROM queue_take_tags(p_queue, r.g, cardinality(r.ids), v_vtime) x;
        CONTINUE WHEN v_base IS NULL;
        UPDATE queue_tasks t SET vtag = round((v_base + v_step * u.o) * 1e6) / 1e6
          FROM unnest(r.ids) WITH ORDINALITY AS u(tid, o)
         WHERE t.id = u.tid AND t.status = 'pending' AND t.vtag IS NULL;
        v_n := v_n + cardinality(r.ids);
    END LOOP;
    RETURN v_n;
END $$;
