-- Cancel tasks of one queue each. p_items: [{"i": item index, "queue": name, and "id": task id or
-- "key": dedupe key, plus "reason": why (text, up to 2,000 characters), "by": who asked (text, up
-- to 60 characters)}]: TEXT_LIMITS.maxCancelReasonLength / maxCancelledByLength in src/limits.ts,
-- to which the node cuts them (sql-bounds.test.ts checks the two agree). By id: that task if it belongs to the item's queue (a task of another queue is
-- not_found, as Requeue Dead by id answers). By key: the live task (pending or processing) of that
-- queue holding the dedupe key.
-- Outcomes per item:
--   cancelled:        the task was waiting (pending: due, delayed or a retry waiting out its backoff),
--                     or processing under a lease that had already expired; it is now in the archive,
--                     status 'cancelled', with cancel_reason and cancelled_by; its dedupe key is free.
--                     It is never claimed again.
--   cancel_requested: the task is held by a live lease: it stays processing, marked cancel-requested
--                     (cancel_requested_at; a repeat keeps the first request's time, reason and who);
--                     its dedupe key is free at once (kept in cancelled_dedupe_key). Its holder's next
--                     Complete, Fail, Release or Extend Lease answers 'cancelled' and ends it cancelled
--                     (queue_cancel_end); if the lease expires first, the expiry sweep ends it
--                     cancelled (queue_expire_leases). Either way it never runs again.
--   finished:         the task already ended (succeeded, dead or cancelled): nothing changed.
--   not_found:        no task with this id in this queue (or no live task with this key in it).
-- Returns the task's status after the call ('cancelled' | 'processing' | its final status | null).
-- Lock waits: every item waits for its row in turn (FOR UPDATE); a batch of several items shares
-- one budget (ol_lock_deadline): a task held past about one lock_timeout in all fails the call
-- (SQLSTATE 55P03), nothing cancelled. Refused (SQLSTATE 22023), as the node refuses it
-- (src/queue/cancel.ts): an item without a queue, or with neither an id nor a key, a reason over 2,000 characters,
-- a who over 60.
-- Serial keys (docs/queue.md, "One at a time per key"): the serial keys of the items' tasks are
-- locked before any task row (queue_serial_hold; a dedupe key's live task is looked up for it first,
-- and one that changed meanwhile has its key locked when found). A cancelled head hands its key to
-- the next task of the key (queue_serial_promote); a cancelled blocked task just leaves the line.
CREATE OR REPLACE FUNCTION queue_cancel(p_items jsonb)
RETURNS TABLE (idx integer, id bigint, outcome text, status text, cancel_requested_at timestamptz, detail text)
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
    v_lock_timeout text;
    v_deadline timestamptz;
BEGIN
    IF EXISTS (SELECT 1 FROM jsonb_array_elements(p_items) AS e
                WHERE e->>'queue' IS NULL OR (e->>'id' IS NULL AND e->>'key' IS NULL)
                   OR char_length(e->>'reason') > 2000 OR char_length(e->>'by') > 60) THEN
        RAISE EXCEPTION 'queue_cancel: every item needs a queue and a task id or dedupe key; a reason of at most 2000 characters and a who of at most 60'
            USING ERRCODE = '22023';
    END IF;
    IF jsonb_array_length(p_items) > 1 THEN
        v_lock_timeout := current_setting('lock_timeout');
        v_deadline := ol_lock_deadline();
    END IF;
    PERFORM queue_serial_hold(ARRAY(
        SELECT x.id FROM jsonb_array_elements(p_items) AS e
          JOIN queue_tasks x ON x.queue = e->>'queue'
                            AND (x.id = (e->>'id')::bigint
                                 OR (e->>'id' IS NULL AND x.dedupe_key = e->>'key' AND x.status IN ('pending', 'processing')))));
    FOR it IN
        SELECT (e->>'i')::integer AS i, (e->>'id')::bigint AS tid, e->>'queue' AS q, e->>'key' AS k,
               e->>'reason' AS reason, e->>'by' AS who
          FROM jsonb_array_elements(p_items) AS e
         ORDER BY (e->>'id')::bigint NULLS LAST, e->>'queue', e->>'key', (e->>'i')::integer
    LOOP
        idx := it.i;
        id := it.tid;
        cancel_requested_at := NULL;
        detail := NULL;
        IF v_deadline IS NOT NULL THEN
            PERFORM ol_lock_budget(v_deadline);
        END IF;
        IF it.tid IS NOT NULL THEN
            SELECT * INTO t FROM queue_tasks x WHERE x.id = it.tid AND x.queue = it.q FOR UPDATE;
        ELSE
            SELECT * INTO t FROM queue_tasks x
             WHERE x.queue = it.q AND x.dedupe_key = it.k AND x.status IN ('pending', 'processing')
               FOR UPDATE;
        END IF;
        IF NOT FOUND THEN
            IF it.tid IS NOT NULL THEN
                SELECT * INTO a FROM queue_tasks_archive x WHERE x.id = it.tid AND x.queue = it.q;
                IF FOUND THEN
                    outcome := 'finished';
                    status := a.status;
                    detail := 'the task already ended (' || a.status || ' at ' || a.finished_at::text || ')';
                    RETURN NEXT;
                    CONTINUE;
                END IF;
            END IF;
            outcome := 'not_found';
            status := NULL;
            detail := CASE WHEN it.tid IS NOT NULL THEN 'no task with this id in this queue' ELSE 'no pending or processing task with this dedupe key in this queue' END;
            RETURN NEXT;
            CONTINUE;
        END IF;
        id := t.id;
        IF t.serial_key IS NOT NULL THEN
            PERFORM pg_advisory_xact_lock(queue_serial_lock(t.queue, t.serial_key));  -- held already unless the key's task changed
        END IF;
        IF t.status = 'dead' THEN
            outcome := 'finished';
            status := t.status;
            detail := 'the task is dead (' || coalesce(t.dead_reason, 'unknown reason') || '); requeue or purge it instead';
        ELSIF t.status = 'processing' AND t.lease_expires_at > queue_now() THEN
            UPDATE queue_tasks x
               SET cancel_requested_at = coalesce(x.cancel_requested_at, queue_now()),
                   cancel_reason = CASE WHEN x.cancel_requested_at IS NULL THEN it.reason ELSE x.cancel_reason END,
                   cancelled_by = CASE WHEN x.cancel_requested_at IS NULL THEN it.who ELSE x.cancelled_by END,
                   cancelled_dedupe_key = coalesce(x.cancelled_dedupe_key, x.dedupe_key),
                   dedupe_key = NULL,
                   updated_at = queue_now()
             WHERE x.id = t.id
            RETURNING x.* INTO t;
            outcome := 'cancel_requested';
            status := t.status;
            cancel_requested_at := t.cancel_requested_at;
            detail := 'held by a lease until ' || t.lease_expires_at::text || '; its holder''s next settle or lease extension answers cancelled';
        ELSE
            -- Waiting, or processing under an expired lease (its holder can no longer settle it).
            DELETE FROM queue_tasks x WHERE x.id = t.id;
            INSERT INTO queue_tasks_archive AS ar (id, queue, priority_group, status, payload, dedupe_key, attempts,
                                                   max_attempts, lease_token, last_error, requeues, enqueued_at, finished_at,
                                                   lease_end, cancel_reason, cancelled_by, operator_action, operator_by,
                                                   operator_reason, operator_at, serial_key)
            VALUES (t.id, t.queue, t.priority_group, 'cancelled', t.payload, coalesce(t.dedupe_key, t.cancelled_dedupe_key),
                    t.attempts, t.max_attempts, t.lease_token, t.last_error, t.requeues, t.enqueued_at, queue_now(),
                    CASE WHEN t.status = 'processing' THEN 'cancelled' ELSE t.lease_end END,
                    coalesce(t.cancel_reason, it.reason), coalesce(t.cancelled_by, it.who),
                    t.operator_action, t.operator_by, t.operator_reason, t.operator_at, t.serial_key);
            IF t.serial_key IS NOT NULL AND NOT t.serial_wait THEN
                PERFORM queue_serial_promote(ARRAY[t.queue], ARRAY[t.serial_key]);
            END IF;
            outcome := 'cancelled';
            status := 'cancelled';
            detail := CASE WHEN t.status = 'processing' THEN 'its lease had expired; cancelled before another claim'
                           ELSE 'cancelled while waiting (attempt ' || t.attempts || ' of ' || t.max_attempts || ' used)' END;
        END IF;
        RETURN NEXT;
    END LOOP;
    IF v_deadline IS NOT NULL THEN
        PERFORM set_config('lock_timeout', v_lock_timeout, true);
    END IF;
END $$;
