-- Requeue dead tasks by hand: the given ids (p_ids not null) or the oldest dead tasks of p_queue
-- (optionally one group), at most p_limit (1 to 10,000; null 50). A requeued task is pending now
-- with attempts 0 and requeues + 1; its last_error stays for the record, dead_reason is cleared and
-- lease_end becomes 'requeued' (a late settle from its last lease is told so).
-- Outcomes per task: requeued | skipped_live_duplicate | not_dead | not_found.
--   skipped_live_duplicate: its dedupe key belongs to a live task (pending or processing), seen
--   before the update or raised by the unique index while this call runs (a concurrent requeue of
--   another dead task with the key, or a producer enqueueing the key): the task stays dead and the
--   rest of the batch goes on; the batch never fails with 23505.
-- Locks: all the tasks are locked in one statement in id order (the global lock order of every
-- statement that locks several task rows), then handled in id order, so concurrent requeues (by id
-- or oldest), settles, expiry sweeps and purges cannot deadlock. Updates then go in (queue, dedupe key,
-- id) order, like enqueue's keyed inserts. Rows come back in id order. All the lock waits of a call
-- share one budget (ol_lock_deadline): a task held past about one lock_timeout in all fails the
-- call (SQLSTATE 55P03), nothing requeued.
-- Refused (SQLSTATE 22023), as the node refuses it (src/queue/requeueDead.ts): a queue or group name
-- outside the rules, a limit outside 1 .. 10000.
CREATE OR REPLACE FUNCTION queue_requeue_dead(p_queue text, p_ids bigint[], p_group text, p_limit integer)
RETURNS TABLE (id bigint, outcome text, queue text, priority_group text, status text, last_error text, requeues integer)
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
    v_id bigint;
    v_ids bigint[];
    v_locked bigint[];
    v_notify text[] := '{}';
    v_q text;
    t queue_tasks%ROWTYPE;
    o_id bigint[] := '{}';
    o_out text[] := '{}';
    o_q text[] := '{}';
    o_g text[] := '{}';
    o_st text[] := '{}';
    o_err text[] := '{}';
    o_req integer[] := '{}';
    v_lock_timeout text := current_setting('lock_timeout');
    v_deadline timestamptz := ol_lock_deadline();
BEGIN
    PERFORM ol_check_texts('queue name', NULL, ARRAY[p_queue], 'name', 200);
    IF p_group IS NOT NULL THEN
        PERFORM ol_check_texts('priority group', NULL, ARRAY[p_group], 'name', 100);
    END IF;
    IF p_ids IS NULL THEN
        PERFORM ol_check_numbers('the limit', NULL, ARRAY[coalesce(p_limit, 50)::double precision], 1, 10000, true);
    END IF;
    IF p_ids IS NOT NULL THEN
        IF cardinality(p_ids) > 10000 THEN
            RAISE EXCEPTION 'queue_requeue_dead: at most 10000 ids, got %', cardinality(p_ids) USING ERRCODE = '22023';
        END IF;
        v_ids := ARRAY(SELECT DISTINCT u.x FROM unnest(p_ids) AS u(x) WHERE u.x IS NOT NULL ORDER BY u.x);
    ELSE
        v_ids := ARRAY(SELECT s.id FROM (
                          SELECT x.id FROM queue_tasks x
                           WHERE x.queue = p_queue AND x.status = 'dead'
                             AND (p_group IS NULL OR x.priority_group = p_group)
                           ORDER BY x.dead_at, x.id
                           LIMIT coalesce(p_limit, 50)) s
                        ORDER BY s.id);
    END IF;
    -- Lock every task of the batch at once, in id order.
    v_locked := ARRAY(SELECT x.id FROM queue_tasks x
                       WHERE x.id = ANY (v_ids) AND (p_queue IS NULL OR x.queue = p_queue)
                       ORDER BY x.id FOR UPDATE);
    FOREACH v_id IN ARRAY v_ids
    LOOP
        IF NOT v_id = ANY (v_locked) THEN
            o_id := o_id || v_id; o_out := o_out || 'not_found'::text; o_q := o_q || NULL::text; o_g := o_g || NULL::text;
            o_st := o_st || NULL::text; o_err := o_err || NULL::text; o_req := o_req || NULL::integer;
        END IF;
    END LOOP;
    -- The locked tasks in (queue, dedupe key, id) order: the order enqueue inserts keys in, so two
    -- calls waiting on each other's uncommitted key in the unique index cannot form a cycle.
    FOR t IN SELECT * FROM queue_tasks x WHERE x.id = ANY (v_locked)
              ORDER BY x.queue, x.dedupe_key NULLS FIRST, x.id
    LOOP
        IF t.status <> 'dead' THEN
            outcome := 'not_dead';
        ELSIF t.dedupe_key IS NOT NULL AND EXISTS (
                SELECT 1 FROM queue_tasks l
                 WHERE l.queue = t.queue AND l.dedupe_key = t.dedupe_key AND l.status IN ('pending', 'processing')) THEN
            outcome := 'skipped_live_duplicate';
        ELSE
            BEGIN
                PERFORM ol_lock_budget(v_deadline);
                -- A subtransaction: a unique violation (a live task with the key committed or in
                -- flight elsewhere) undoes only this task's update.
                UPDATE queue_tasks x
                   SET status = 'pending', attempts = 0, run_at = queue_now(), dead_at = NULL, dead_reason = NULL, vtag = NULL,
                       lease_expires_at = NULL, lease_end = 'requeued', requeues = least(x.requeues, 2147483646) + 1, updated_at = queue_now()
                 WHERE x.id = t.id AND x.status = 'dead'
                RETURNING x.* INTO t;
                outcome := 'requeued';
                IF NOT t.queue = ANY (v_notify) THEN
                    v_notify := v_notify || t.queue;
                END IF;
            EXCEPTION WHEN unique_violation THEN
                outcome := 'skipped_live_duplicate';
            END;
        END IF;
        o_id := o_id || t.id; o_out := o_out || outcome; o_q := o_q || t.queue; o_g := o_g || t.priority_group;
        o_st := o_st || t.status; o_err := o_err || t.last_error; o_req := o_req || t.requeues;
    END LOOP;
    RETURN QUERY SELECT u.* FROM unnest(o_id, o_out, o_q, o_g, o_st, o_err, o_req) AS u ORDER BY 1;
    FOREACH v_q IN ARRAY v_notify LOOP
        PERFORM pg_notify(queue_channel(v_q), v_q);
    END LOOP;
    PERFORM set_config('lock_timeout', v_lock_timeout, true);
END $$;
