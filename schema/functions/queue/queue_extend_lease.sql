-- Extend leases (heartbeat). p_items: [{"i", "id", "tok", "secs": new lease length from now, seconds}].
-- Outcomes: extended | lease_lost | not_found (misses: queue_settle_miss; a settled lease cannot be
-- extended, so there is no already_settled here).
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
        IF it.secs IS NULL OR it.secs <= 0 OR it.secs > 31536000 OR it.secs <> it.secs THEN
            RAISE EXCEPTION 'queue_extend_lease: lease seconds must be above 0 and at most 31536000 (item %)', it.i USING ERRCODE = '22023';
        END IF;
        idx := it.i;
        id := it.tid;
        detail := NULL;
        UPDATE queue_tasks x
           SET lease_expires_at = now() + make_interval(secs => it.secs), updated_at = now()
         -- status || '': does not match the lease index's predicate, so the row is found by primary
         -- key even when the statistics say few tasks are processing (see queue_complete).
         WHERE x.id = it.tid AND x.status || '' = 'processing' AND x.lease_token = it.tok AND x.lease_expires_at > now()
        RETURNING x.* INTO t;
        IF FOUND THEN
            outcome := 'extended';
            status := t.status;
            lease_expires_at := t.lease_expires_at;
        ELSE
            lease_expires_at := NULL;
            SELECT m.outcome, m.status, m.detail INTO outcome, status, detail
              FROM queue_settle_miss('extend', it.tid, it.tok) m;
        END IF;
        RETURN NEXT;
    END LOOP;
END $$;
