-- Extend leases (heartbeat). p_items: [{"i", "id", "tok", "secs": new lease length from now, seconds}].
-- Outcomes: extended | lease_lost | not_found (misses: queue_settle_miss; a settled lease cannot be
-- extended, so there is no already_settled here).
-- "secs" outside 1 .. 86400 (the same lease bound as queue_claim and the node, src/queue/dequeue.ts
-- and src/queue/extendLease.ts) is refused (SQLSTATE 22023, nothing extended). Lock waits: a batch
-- of several items shares one budget (ol_lock_deadline): a task held past about one lock_timeout
-- in all fails the call (55P03).
CREATE OR REPLACE FUNCTION queue_extend_lease(p_items jsonb)
RETURNS TABLE (idx integer, id bigint, outcome text, status text, lease_expires_at timestamptz, detail text)
LANGUAGE plpgsql
SET search_path FROM CURRENT
-- A plan is kept per connection, and one made while the tables were small (or analysed small)
-- reads them sequentially for as long as the connection lives, even for a primary-key lookup:
-- sequential scans are priced out (docs/queue.md, "Scale"). JIT is off: a statement whose
-- only path is a scan would carry the priced-out cost and be compiled on every call.
SET enable_seqscan = off
SET jit = off
AS $$
#variable_conflict use_column
DECLARE
    it record;
    t queue_tasks%ROWTYPE;
    v_lock_timeout text;
    v_deadline timestamptz;
BEGIN
    PERFORM ol_check_numbers('the lease (seconds)', x.i, x.secs, 1, 86400, false)
      FROM (SELECT array_agg((e->>'i')::integer) AS i, array_agg((e->>'secs')::double precision) AS secs
              FROM jsonb_array_elements(p_items) AS e) x;
    IF jsonb_array_length(p_items) > 1 THEN
        v_lock_timeout := current_setting('lock_timeout');
        v_deadline := ol_lock_deadline();
    END IF;
    FOR it IN
        SELECT (e->>'i')::integer AS i, (e->>'id')::bigint AS tid, (e->>'tok')::uuid AS tok,
               (e->>'secs')::double precision AS secs
        FROM jsonb_array_elements(p_items) AS e
        ORDER BY (e->>'id')::bigint, (e->>'i')::integer
    LOOP
        idx := it.i;
        IF v_deadline IS NOT NULL THEN
            PERFORM ol_lock_budget(v_deadline);
        END IF;
        id := it.tid;
        detail := NULL;
        UPDATE queue_tasks x
           SET lease_expires_at = queue_now() + make_interval(secs => it.secs), updated_at = queue_now()
         -- status || '': does not match the lease index's predicate, so the row is found by primary
         -- key even when the statistics say few tasks are processing (see queue_complete).
         WHERE x.id = it.tid AND x.status || '' = 'processing' AND x.lease_token = it.tok AND x.lease_expires_at > queue_now()
           AND x.cancel_requested_at IS NULL
        RETURNING x.* INTO t;
        IF FOUND THEN
            outcome := 'extended';
            status := t.status;
            lease_expires_at := t.lease_expires_at;
        ELSIF queue_cancel_end(it.tid, it.tok) THEN
            -- A cancel was requested while this lease held the task: it ends cancelled; the holder must stop.
            outcome := 'cancelled';
            status := 'cancelled';
            lease_expires_at := NULL;
            detail := 'the task was cancelled while this lease held it: stop working on it';
        ELSE
            lease_expires_at := NULL;
            SELECT m.outcome, m.status, m.detail INTO outcome, status, detail
              FROM queue_settle_miss('extend', it.tid, it.tok) m;
        END IF;
        RETURN NEXT;
    END LOOP;
    IF v_deadline IS NOT NULL THEN
        PERFORM set_config('lock_timeout', v_lock_timeout, true);
    END IF;
END $$;
