-- Release tasks back to pending (the holder gives up its lease without failing the task).
-- p_items: [{"i", "id", "tok", "delay": seconds before it may be claimed again (0: keeps its place
-- at the head of its group), "count": true to count the attempt (default false: attempts - 1)}].
-- Outcomes: released | already_settled | lease_lost | not_found (misses: queue_settle_miss).
-- A release that counts the attempt at max attempts leaves the task pending with its attempts used
-- up: the next claim sends it dead ('attempts_exhausted') instead of handing it out.
CREATE OR REPLACE FUNCTION queue_release(p_items jsonb)
RETURNS TABLE (idx integer, id bigint, outcome text, status text, attempts integer, run_at timestamptz, detail text)
LANGUAGE plpgsql
SET search_path FROM CURRENT
AS $$
#variable_conflict use_column
DECLARE
    it record;
    t queue_tasks%ROWTYPE;
BEGIN
    FOR it IN
        SELECT (e->>'i')::integer AS i, (e->>'id')::bigint AS tid, (e->>'tok')::uuid AS tok,
               -- 0 to one year (a larger delay would overflow now() + delay).
               least(greatest(coalesce((e->>'delay')::double precision, 0), 0), 31536000) AS delay,
               coalesce((e->>'count')::boolean, false) AS count_attempt
        FROM jsonb_array_elements(p_items) AS e
        ORDER BY (e->>'id')::bigint, (e->>'i')::integer
    LOOP
        idx := it.i;
        id := it.tid;
        detail := NULL;
        UPDATE queue_tasks x
           SET status = 'pending', lease_expires_at = NULL, updated_at = now(), lease_end = 'released',
               attempts = CASE WHEN it.count_attempt THEN x.attempts ELSE greatest(x.attempts - 1, 0) END,
               run_at = CASE WHEN it.delay > 0 THEN now() + make_interval(secs => it.delay) ELSE x.run_at END,
               -- With a delay: re-tagged when due (queue_tag_due); without: it keeps its tag (its place).
               vtag = CASE WHEN it.delay > 0 THEN NULL ELSE x.vtag END
         -- status || '': does not match the lease index's predicate, so the row is found by primary
         -- key even when the statistics say few tasks are processing (see queue_complete).
         WHERE x.id = it.tid AND x.status || '' = 'processing' AND x.lease_token = it.tok AND x.lease_expires_at > now()
        RETURNING x.* INTO t;
        IF FOUND THEN
            outcome := 'released';
            status := t.status;
            attempts := t.attempts;
            run_at := CASE WHEN t.status = 'pending' THEN t.run_at END;
        ELSE
            SELECT m.outcome, m.status, m.attempts, m.run_at, m.detail
              INTO outcome, status, attempts, run_at, detail
              FROM queue_settle_miss('release', it.tid, it.tok) m;
        END IF;
        RETURN NEXT;
    END LOOP;
END $$;
