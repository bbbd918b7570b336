-- Release tasks back to pending (the holder gives up its lease without failing the task).
-- p_items: [{"i", "id", "tok", "delay": seconds before it may be claimed again (0: keeps its place
-- at the head of its group), "count": true to count the attempt (default false: attempts - 1)}].
-- Outcomes: released | already_settled | lease_lost | not_found (misses: queue_settle_miss).
-- A release that counts the attempt at max attempts leaves the task pending with its attempts used
-- up: the next claim sends it dead ('attempts_exhausted') instead of handing it out.
-- A delay outside 0 .. 31536000 seconds (the node's bound, src/queue/release.ts) is refused
-- (SQLSTATE 22023, nothing released). Lock waits: a batch of several items shares one budget
-- (ol_lock_deadline): a task held past about one lock_timeout in all fails the call (55P03).
CREATE OR REPLACE FUNCTION queue_release(p_items jsonb)
RETURNS TABLE (idx integer, id bigint, outcome text, status text, attempts integer, run_at timestamptz, detail text)
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
    -- 0 to one year (a larger delay would overflow queue_now() + delay).
    PERFORM ol_check_numbers('the release delay (seconds)', x.i, x.d, 0, 31536000, false)
      FROM (SELECT array_agg((e->>'i')::integer) AS i, array_agg(coalesce((e->>'delay')::double precision, 0)) AS d
              FROM jsonb_array_elements(p_items) AS e) x;
    IF jsonb_array_length(p_items) > 1 THEN
        v_lock_timeout := current_setting('lock_timeout');
        v_deadline := ol_lock_deadline();
    END IF;
    FOR it IN
        SELECT (e->>'i')::integer AS i, (e->>'id')::bigint AS tid, (e->>'tok')::uuid AS tok,
               coalesce((e->>'delay')::double precision, 0) AS delay,
               coalesce((e->>'count')::boolean, false) AS count_attempt
        FROM jsonb_array_elements(p_items) AS e
        ORDER BY (e->>'id')::bigint, (e->>'i')::integer
    LOOP
        idx := it.i;
        id := it.tid;
        detail := NULL;
        IF v_deadline IS NOT NULL THEN
            PERFORM ol_lock_budget(v_deadline);
        END IF;
        UPDATE queue_tasks x
           SET status = 'pending', lease_expires_at = NULL, updated_at = queue_now(), lease_end = 'released',
               attempts = CASE WHEN it.count_attempt THEN x.attempts ELSE greatest(x.attempts - 1, 0) END,
               run_at = CASE WHEN it.delay > 0 THEN queue_now() + make_interval(secs => it.delay) ELSE x.run_at END,
               -- With a delay: re-tagged when due (queue_tag_due); without: it keeps its tag (its place).
               vtag = CASE WHEN it.delay > 0 THEN NULL ELSE x.vtag END
         -- status || '': does not match the lease index's predicate, so the row is found by primary
         -- key even when the statistics say few tasks are processing (see queue_complete).
         WHERE x.id = it.tid AND x.status || '' = 'processing' AND x.lease_token = it.tok AND x.lease_expires_at > queue_now()
           AND x.cancel_requested_at IS NULL
        RETURNING x.* INTO t;
        IF FOUND THEN
            outcome := 'released';
            status := t.status;
            attempts := t.attempts;
            run_at := CASE WHEN t.status = 'pending' THEN t.run_at END;
        ELSIF queue_cancel_end(it.tid, it.tok) THEN
            -- A cancel was requested while this lease held the task: it ends cancelled; the holder must stop.
            outcome := 'cancelled';
            status := 'cancelled';
            attempts := NULL;
            run_at := NULL;
            detail := 'the task was cancelled while this lease held it: stop working on it';
        ELSE
            SELECT m.outcome, m.status, m.attempts, m.run_at, m.detail
              INTO outcome, status, attempts, run_at, detail
              FROM queue_settle_miss('release', it.tid, it.tok) m;
        END IF;
        RETURN NEXT;
    END LOOP;
    IF v_deadline IS NOT NULL THEN
        PERFORM set_config('lock_timeout', v_lock_timeout, true);
    END IF;
END $$;
