-- Fail a batch. p_items: [{"i": item index, "id": task id, "tok": lease token, "err": error text,
-- "giveUp": true to go dead now, "delay": optional fixed retry delay in seconds, 0 to 31536000}].
-- Backoff in seconds: b = least(p_cap_secs, p_base_secs * 2^(attempts-1)), retry after
-- b/2 + random() * b/2 ("equal jitter": at least half the backoff); an item with "delay" retries
-- after exactly that many seconds instead (no backoff, no jitter). A delay out of bounds raises 22023. At max attempts (or
-- giveUp) the task goes dead with the error as last_error; that transition happens once, because it
-- needs the live lease that it ends.
-- Outcomes: retry_scheduled | dead | already_settled | lease_lost | not_found (misses decided by
-- queue_settle_miss / queue_settle_verdict, the table in docs/queue.md).
-- Lock waits: a batch of several items shares one budget (ol_lock_deadline): a task held past about
-- one lock_timeout in all fails the call (SQLSTATE 55P03), nothing recorded.
CREATE OR REPLACE FUNCTION queue_fail(p_items jsonb, p_base_secs double precision, p_cap_secs double precision)
RETURNS TABLE (
    idx integer, id bigint, outcome text, status text, attempts integer, max_attempts integer,
    retry_at timestamptz, last_error text, detail text
)
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
    a queue_tasks_archive%ROWTYPE;
    b double precision;
    v_lock_timeout text;
    v_deadline timestamptz;
BEGIN
    -- The node's bounds (src/queue/fail.ts, prepareBackoff): base 0 to 86,400 s, cap 0 to 31,536,000 s
    -- (one year), so queue_now() + backoff always fits a timestamptz (no 22008); the exponent is capped
    -- at 60, so 2^(attempts-1) never overflows (no 22003).
    IF p_base_secs IS NULL OR p_base_secs < 0 OR p_cap_secs IS NULL OR p_cap_secs < 0
       OR p_base_secs > 86400 OR p_cap_secs > 31536000 THEN
        RAISE EXCEPTION 'queue_fail: the backoff base must be from 0 to 86400 seconds and the cap from 0 to 31536000, got base % and cap %', p_base_secs, p_cap_secs
            USING ERRCODE = '22023';
    END IF;
    IF jsonb_array_length(p_items) > 1 THEN
        v_lock_timeout := current_setting('lock_timeout');
        v_deadline := ol_lock_deadline();
    END IF;
    FOR it IN
        SELECT (e->>'i')::integer AS i, (e->>'id')::bigint AS tid, (e->>'tok')::uuid AS tok,
               coalesce(e->>'err', 'failed') AS err, coalesce((e->>'giveUp')::boolean, false) AS give_up,
               (e->>'delay')::double precision AS delay
        FROM jsonb_array_elements(p_items) AS e
        ORDER BY (e->>'id')::bigint, (e->>'i')::integer
    LOOP
        idx := it.i;
        id := it.tid;
        retry_at := NULL;
        detail := NULL;
        IF it.delay IS NOT NULL AND NOT (it.delay BETWEEN 0 AND 31536000) THEN
            RAISE EXCEPTION 'queue_fail: a fixed retry delay must be from 0 to 31536000 seconds, got %', it.delay
                USING ERRCODE = '22023';
        END IF;
        IF v_deadline IS NOT NULL THEN
            PERFORM ol_lock_budget(v_deadline);
        END IF;
        SELECT * INTO t FROM queue_tasks x
         -- status || '': does not match the lease index's predicate, so the row is found by primary
         -- key even when the statistics say few tasks are processing (see queue_complete).
         WHERE x.id = it.tid AND x.status || '' = 'processing' AND x.lease_token = it.tok AND x.lease_expires_at > queue_now()
           AND x.cancel_requested_at IS NULL
           FOR UPDATE;
        IF FOUND THEN
            IF it.give_up OR t.attempts >= t.max_attempts THEN
                UPDATE queue_tasks x
                   SET status = 'dead', last_error = it.err, dead_at = queue_now(), lease_expires_at = NULL, updated_at = queue_now(),
                       lease_end = CASE WHEN it.give_up THEN 'gave_up' ELSE 'failed' END,
                       dead_reason = CASE WHEN it.give_up THEN 'gave_up' ELSE 'max_attempts_reached' END
                 WHERE x.id = t.id AND x.status || '' = 'processing' AND x.lease_token = it.tok
                RETURNING x.* INTO t;
                outcome := 'dead';
                detail := CASE WHEN it.give_up THEN 'gave up: no retry' ELSE 'max attempts reached' END;
            ELSE
                b := least(p_cap_secs, p_base_secs * power(2::double precision, least(greatest(t.attempts - 1, 0), 60)));
                UPDATE queue_tasks x
                   SET status = 'pending', last_error = it.err, lease_expires_at = NULL, updated_at = queue_now(), lease_end = 'failed',
                       run_at = queue_now() + make_interval(secs => coalesce(it.delay, b / 2 + random() * b / 2)),
                       -- Re-tagged when due, as if enqueued then (queue_tag_due; docs/queue.md, "Scheduling").
                       vtag = NULL
                 WHERE x.id = t.id AND x.status || '' = 'processing' AND x.lease_token = it.tok
                RETURNING x.* INTO t;
                outcome := 'retry_scheduled';
                retry_at := t.run_at;
            END IF;
            status := t.status;
            attempts := t.attempts;
            max_attempts := t.max_attempts;
            last_error := t.last_error;
        ELSIF queue_cancel_end(it.tid, it.tok) THEN
            -- A cancel was requested while this lease held the task: it ends cancelled; the holder must stop.
            outcome := 'cancelled';
            status := 'cancelled';
            attempts := NULL;
            max_attempts := NULL;
            last_error := NULL;
            detail := 'the task was cancelled while this lease held it: stop working on it';
        ELSE
            SELECT m.outcome, m.status, m.attempts, m.max_attempts, m.last_error, m.detail
              INTO outcome, status, attempts, max_attempts, last_error, detail
              FROM queue_settle_miss('fail', it.tid, it.tok) m;
        END IF;
        RETURN NEXT;
    END LOOP;
    IF v_deadline IS NOT NULL THEN
        PERFORM set_config('lock_timeout', v_lock_timeout, true);
    END IF;
END $$;
