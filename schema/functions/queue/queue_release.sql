-- Release tasks back to pending (the holder gives up its lease without failing the task).
-- p_items: [{"i", "id", "tok", "delay": seconds before it may be claimed again (0: keeps its place
-- at the head of its group), "count": true to count the attempt (default false: attempts - 1)}].
-- Outcomes: released | already_settled | lease_lost | not_found.
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
               greatest(coalesce((e->>'delay')::double precision, 0), 0) AS delay,
               coalesce((e->>'count')::boolean, false) AS count_attempt
        FROM jsonb_array_elements(p_items) AS e
        ORDER BY (e->>'id')::bigint, (e->>'i')::integer
    LOOP
        idx := it.i;
        id := it.tid;
        detail := NULL;
        UPDATE queue_tasks x
           SET status = 'pending', lease_expires_at = NULL, updated_at = now(),
               attempts = CASE WHEN it.count_attempt THEN x.attempts ELSE greatest(x.attempts - 1, 0) END,
               run_at = CASE WHEN it.delay > 0 THEN now() + make_interval(secs => it.delay) ELSE x.run_at END
         WHERE x.id = it.tid AND x.status = 'processing' AND x.lease_token = it.tok AND x.lease_expires_at > now()
        RETURNING x.* INTO t;
        IF FOUND THEN
            outcome := 'released';
        ELSE
            SELECT * INTO t FROM queue_tasks x WHERE x.id = it.tid;
            IF FOUND THEN
                outcome := CASE WHEN t.lease_token = it.tok AND t.status <> 'processing' THEN 'already_settled' ELSE 'lease_lost' END;
                detail := queue_lease_lost_reason(t, it.tok);
            ELSE
                t := NULL;
                SELECT x.status INTO t.status FROM queue_tasks_archive x WHERE x.id = it.tid;
                IF FOUND THEN
                    outcome := 'lease_lost';
                    detail := 'the task is finished (' || t.status || ')';
                ELSE
                    outcome := 'not_found';
                    detail := 'no task with this id';
                END IF;
            END IF;
        END IF;
        status := t.status;
        attempts := t.attempts;
        run_at := CASE WHEN t.status = 'pending' THEN t.run_at END;
        RETURN NEXT;
    END LOOP;
END $$;
