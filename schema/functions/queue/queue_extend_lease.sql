-- Extend leases (heartbeat). p_items: [{"i", "id", "tok", "secs": new lease length from now, seconds}].
-- Outcomes: extended | lease_lost | not_found.
CREATE OR REPLACE FUNCTION queue_extend_lease(p_items jsonb)
RETURNS TABLE (idx integer, id bigint, outcome text, status text, lease_expires_at timestamptz, detail text)
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
               (e->>'secs')::double precision AS secs
        FROM jsonb_array_elements(p_items) AS e
        ORDER BY (e->>'id')::bigint, (e->>'i')::integer
    LOOP
        IF it.secs IS NULL OR it.secs <= 0 THEN
            RAISE EXCEPTION 'queue_extend_lease: lease seconds must be positive (item %)', it.i USING ERRCODE = '22023';
        END IF;
        idx := it.i;
        id := it.tid;
        detail := NULL;
        UPDATE queue_tasks x
           SET lease_expires_at = now() + make_interval(secs => it.secs), updated_at = now()
         WHERE x.id = it.tid AND x.status = 'processing' AND x.lease_token = it.tok AND x.lease_expires_at > now()
        RETURNING x.* INTO t;
        IF FOUND THEN
            outcome := 'extended';
            status := t.status;
            lease_expires_at := t.lease_expires_at;
        ELSE
            lease_expires_at := NULL;
            SELECT * INTO t FROM queue_tasks x WHERE x.id = it.tid;
            IF FOUND THEN
                outcome := 'lease_lost';
                status := t.status;
                detail := queue_lease_lost_reason(t, it.tok);
            ELSE
                SELECT x.status INTO status FROM queue_tasks_archive x WHERE x.id = it.tid;
                IF FOUND THEN
                    outcome := 'lease_lost';
                    detail := 'the task is finished (' || status || ')';
                ELSE
                    outcome := 'not_found';
                    status := NULL;
                    detail := 'no task with this id';
                END IF;
            END IF;
        END IF;
        RETURN NEXT;
    END LOOP;
END $$;
