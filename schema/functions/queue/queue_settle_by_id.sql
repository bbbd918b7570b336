-- Settle tasks by id without their lease: an operator's complete, fail, retry or reschedule (issue
-- 26; the peers' completeJobs / permanentlyFailJobs / rescheduleJobs). p_items: [{"i": item index,
-- "queue": name, "id": task id, "act": 'complete' | 'fail' | 'retry' | 'reschedule', "res": result
-- json or null (complete), "at": ISO-8601 time or null (retry, reschedule: when it may run again;
-- null or a past time = now), "reason": why (text, up to 2,000 characters), "by": who (text, up to
-- 60 characters)}]: TEXT_LIMITS.maxSettleByIdReasonLength / maxSettleByIdByLength in src/limits.ts,
-- to which the node cuts them. A task of another queue is not_found (as Cancel and Requeue Dead by id).
-- Every act records operator_action, operator_by, operator_reason and operator_at on the task (and
-- in the archive when the task ends).
--   complete:   a pending, processing or dead task moves to the archive as succeeded with "res".
--   fail:       a pending or processing task goes dead now, dead_reason 'operator_failed', the
--               reason as last_error.
--   retry:      a pending or processing task is pending again at "at", the reason as last_error (a
--               failed attempt: attempts stay as they are); at max attempts it goes dead instead
--               ('max_attempts_reached'), as a Fail at the last attempt does.
--   reschedule: a pending or processing task is pending again at "at" (attempts and last_error stay).
--   A processing task is acted on whether its lease is live or expired: its lease ends 'operator'
--   (lease_ended true) and the holder's next Complete, Fail, Release or Extend Lease answers
--   lease_lost, changing nothing (the row keeps the holder's token but is no longer processing, the
--   only state a settle applies to). Rescheduled and retried tasks are tagged again when due
--   (vtag null, queue_tag_due), as a Fail's retry is.
-- Outcomes per item: completed | dead | retry_scheduled | rescheduled |
--   finished:         nothing changed: the task already ended (succeeded or cancelled), or it is dead
--                     and the act is fail, retry or reschedule (Requeue Dead brings a dead task back);
--   cancel_requested: nothing changed: the task's holder was asked to stop (Cancel); it ends
--                     cancelled at that holder's next settle or when the lease expires;
--   not_found:        no task with this id in this queue.
-- Returns the task's status after the call, its run_at when pending, whether a lease was ended.
-- Lock waits: every item waits for its row in turn (FOR UPDATE, in id order); a batch of several
-- items shares one budget (ol_lock_deadline): a task held past about one lock_timeout in all fails
-- the call (SQLSTATE 55P03), nothing changed. A queue that gained a pending task is notified, as
-- Enqueue notifies (its name when the task is due now, '' when later).
-- Refused (SQLSTATE 22023), as the node refuses it (src/queue/settleById.ts): an item without a
-- queue or an id, an act not listed, a reason over 2,000 characters, a who over 60.
-- Serial keys (docs/queue.md, "One at a time per key"): the items' serial keys are locked before
-- any task row (queue_serial_hold); a completed head hands its key to the next task of the key
-- (queue_serial_promote). A blocked task stays blocked whatever is done to it (failed: a dead task
-- that becomes its key's dead head in turn; retried or rescheduled: still behind its head).
CREATE OR REPLACE FUNCTION queue_settle_by_id(p_items jsonb)
RETURNS TABLE (idx integer, id bigint, outcome text, status text, run_at timestamptz, lease_ended boolean, detail text)
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
    v_now timestamptz := queue_now();
    v_held boolean;
    v_notify text[] := '{}';
    v_later text[] := '{}';
    v_q text;
    v_lock_timeout text;
    v_deadline timestamptz;
BEGIN
    IF EXISTS (SELECT 1 FROM jsonb_array_elements(p_items) AS e
                WHERE e->>'queue' IS NULL OR e->>'id' IS NULL
                   OR e->>'act' IS NULL OR e->>'act' NOT IN ('complete', 'fail', 'retry', 'reschedule')
                   OR char_length(e->>'reason') > 2000 OR char_length(e->>'by') > 60) THEN
        RAISE EXCEPTION 'queue_settle_by_id: every item needs a queue, a task id and an act (complete, fail, retry or reschedule); a reason of at most 2000 characters and a who of at most 60'
            USING ERRCODE = '22023';
    END IF;
    IF jsonb_array_length(p_items) > 1 THEN
        v_lock_timeout := current_setting('lock_timeout');
        v_deadline := ol_lock_deadline();
    END IF;
    PERFORM queue_serial_hold(ARRAY(SELECT (e->>'id')::bigint FROM jsonb_array_elements(p_items) AS e));
    FOR it IN
        SELECT (e->>'i')::integer AS i, (e->>'id')::bigint AS tid, e->>'queue' AS q, e->>'act' AS act,
               e->'res' AS res, greatest(coalesce((e->>'at')::timestamptz, v_now), v_now) AS at,
               e->>'reason' AS reason, e->>'by' AS who
          FROM jsonb_array_elements(p_items) AS e
         ORDER BY (e->>'id')::bigint, (e->>'i')::integer
    LOOP
        idx := it.i;
        id := it.tid;
        run_at := NULL;
        lease_ended := false;
        detail := NULL;
        IF v_deadline IS NOT NULL THEN
            PERFORM ol_lock_budget(v_deadline);
        END IF;
        SELECT * INTO t FROM queue_tasks x WHERE x.id = it.tid AND x.queue = it.q FOR UPDATE;
        IF NOT FOUND THEN
            SELECT * INTO a FROM queue_tasks_archive x WHERE x.id = it.tid AND x.queue = it.q;
            IF FOUND THEN
                outcome := 'finished';
                status := a.status;
                detail := 'the task already ended (' || a.status || ' at ' || a.finished_at::text || ')';
            ELSE
                outcome := 'not_found';
                status := NULL;
                detail := 'no task with this id in this queue';
            END IF;
            RETURN NEXT;
            CONTINUE;
        END IF;
        IF t.cancel_requested_at IS NOT NULL THEN
            outcome := 'cancel_requested';
            status := t.status;
            detail := 'a cancel was requested at ' || t.cancel_requested_at::text || ': the task ends cancelled at its holder''s next settle or when its lease expires';
            RETURN NEXT;
            CONTINUE;
        END IF;
        IF t.status = 'dead' AND it.act <> 'complete' THEN
            outcome := 'finished';
            status := 'dead';
            detail := 'the task is dead (' || coalesce(t.dead_reason, 'unknown reason') || '); Requeue Dead brings it back';
            RETURN NEXT;
            CONTINUE;
        END IF;
        v_held := t.status = 'processing';
        lease_ended := v_held;
        IF it.act = 'complete' THEN
            DELETE FROM queue_tasks x WHERE x.id = t.id;
            INSERT INTO queue_tasks_archive (id, queue, priority_group, status, payload, dedupe_key, attempts, max_attempts,
                                             lease_token, last_error, result, requeues, enqueued_at, finished_at, lease_end,
                                             archived_at, operator_action, operator_by, operator_reason, operator_at, serial_key)
            VALUES (t.id, t.queue, t.priority_group, 'succeeded', t.payload, t.dedupe_key, t.attempts, t.max_attempts,
                    t.lease_token, t.last_error, it.res, t.requeues, t.enqueued_at, v_now,
                    CASE WHEN v_held THEN 'operator' ELSE t.lease_end END, v_now, 'complete', it.who, it.reason, v_now, t.serial_key);
            IF t.serial_key IS NOT NULL AND NOT t.serial_wait THEN
                PERFORM queue_serial_promote(ARRAY[t.queue], ARRAY[t.serial_key]);
            END IF;
            outcome := 'completed';
            status := 'succeeded';
            detail := CASE WHEN t.status = 'dead' THEN 'completed by hand; it was dead (' || coalesce(t.dead_reason, 'unknown reason') || ')'
                           WHEN v_held THEN 'completed by hand; the lease that held it is ended (its holder''s settle answers lease_lost)'
                           ELSE 'completed by hand while waiting' END;
        ELSIF it.act = 'fail' OR (it.act = 'retry' AND t.attempts >= t.max_attempts) THEN
            UPDATE queue_tasks x
               SET status = 'dead', dead_at = v_now, lease_expires_at = NULL, updated_at = v_now,
                   last_error = coalesce(it.reason, 'failed by hand'),
                   dead_reason = CASE WHEN it.act = 'fail' THEN 'operator_failed' ELSE 'max_attempts_reached' END,
                   lease_end = CASE WHEN v_held THEN 'operator' ELSE x.lease_end END,
                   operator_action = it.act, operator_by = it.who, operator_reason = it.reason, operator_at = v_now
             WHERE x.id = t.id
            RETURNING x.* INTO t;
            outcome := 'dead';
            status := 'dead';
            detail := CASE WHEN it.act = 'fail' THEN 'failed by hand: dead, no retry'
                           ELSE 'retry asked at max attempts (' || t.attempts || ' of ' || t.max_attempts || ' used): dead' END;
        ELSE
            UPDATE queue_tasks x
               SET status = 'pending', run_at = it.at, vtag = NULL, lease_expires_at = NULL, updated_at = v_now,
                   last_error = CASE WHEN it.act = 'retry' THEN coalesce(it.reason, 'retried by hand') ELSE x.last_error END,
                   lease_end = CASE WHEN v_held THEN 'operator' ELSE x.lease_end END,
                   operator_action = it.act, operator_by = it.who, operator_reason = it.reason, operator_at = v_now
             WHERE x.id = t.id
            RETURNING x.* INTO t;
            outcome := CASE WHEN it.act = 'retry' THEN 'retry_scheduled' ELSE 'rescheduled' END;
            status := 'pending';
            run_at := t.run_at;
            detail := 'pending again from ' || t.run_at::text || ' (attempt ' || t.attempts || ' of ' || t.max_attempts || ' used)';
            IF t.run_at <= v_now AND NOT t.queue = ANY (v_notify) THEN
                v_notify := v_notify || t.queue;
            ELSIF t.run_at > v_now AND NOT t.queue = ANY (v_later) THEN
                v_later := v_later || t.queue;
            END IF;
        END IF;
        IF v_held THEN
            detail := detail || CASE WHEN outcome = 'completed' THEN '' ELSE '; the lease that held it is ended (its holder''s settle answers lease_lost)' END;
        END IF;
        RETURN NEXT;
    END LOOP;
    -- As Enqueue notifies: the queue name when a task is claimable now, '' when it waits for later.
    FOREACH v_q IN ARRAY v_notify LOOP
        PERFORM pg_notify(queue_channel(v_q), v_q);
    END LOOP;
    FOREACH v_q IN ARRAY v_later LOOP
        IF NOT v_q = ANY (v_notify) THEN
            PERFORM pg_notify(queue_channel(v_q), '');
        END IF;
    END LOOP;
    IF v_deadline IS NOT NULL THEN
        PERFORM set_config('lock_timeout', v_lock_timeout, true);
    END IF;
END $$;
