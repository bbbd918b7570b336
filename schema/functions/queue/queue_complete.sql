-- Complete a batch. p_items: [{"i": item index, "id": task id, "tok": lease token, "res": result json or null}].
-- Outcomes: completed (moved to the archive as succeeded) | already_settled (this lease token already
-- settled it) | lease_lost (a superseded lease: row untouched; detail says what happened) | not_found.
-- The misses are decided by queue_settle_miss / queue_settle_verdict (the table in docs/queue.md).
-- The first item of every task id is completed by one DELETE … RETURNING piped into the archive
-- INSERT (rows taken in id order); only the items it did not complete (lost leases, repeated ids)
-- go through the item-by-item path, which says why. A batch of ONE item (every Complete of a
-- consumer that claims one task at a time) takes none of that: one DELETE … RETURNING into the
-- archive INSERT by primary key, and queue_settle_miss when it did not apply (the same two steps
-- the item-by-item path takes for each item), so the common call is a single statement.
-- Lock waits: all of a batch's waits share one budget (ol_lock_deadline): a task held past about
-- one lock_timeout in all fails the call (SQLSTATE 55P03), nothing completed. Rows are locked in id
-- order (never skipped while later ones are held), so concurrent settles cannot deadlock.
-- Serial keys (docs/queue.md, "One at a time per key"): the keys of the batch's tasks are locked
-- first (queue_serial_hold, keys before rows), and each key whose head completed gets its next task
-- in the same transaction (queue_serial_promote). A task without a serial key costs one more
-- primary-key probe (the read of its key).
CREATE OR REPLACE FUNCTION queue_complete(p_items jsonb)
RETURNS TABLE (idx integer, id bigint, outcome text, status text, attempts integer, finished_at timestamptz, detail text)
LANGUAGE plpgsql
SET search_path FROM CURRENT
-- A plan is kept per connection, and one made while the tables were small (or analysed small)
-- reads them sequentially for as long as the connection lives, even for a primary-key lookup:
-- sequential scans are priced out (docs/queue.md, "Scale"). JIT is off: a statement whose
-- only path is a scan would carry the priced-out cost and be compiled on every call.
SET enable_seqscan = off
SET jit = off
-- Plans made once per connection: every statement below finds its rows by primary key whatever the
-- batch (the status tests cannot use the lease index, see below), so a cached plan is as good as one
-- made per call, and planning per call is a measurable part of completing one task (BENCHMARKS.md,
-- "where a task's time goes").
SET plan_cache_mode = force_generic_plan
AS $$
#variable_conflict use_column
DECLARE
    it record;
    a queue_tasks_archive%ROWTYPE;
    t queue_tasks%ROWTYPE;
    v_i integer[];
    v_id bigint[];
    v_att integer[];
    v_fin timestamptz[];
    v_map jsonb;
    v_ids bigint[];
    v_tid bigint;
    v_tok uuid;
    v_lock_timeout text;
    v_deadline timestamptz;
    v_serial boolean;
BEGIN
    IF jsonb_array_length(p_items) = 1 THEN
        idx := (p_items->0->>'i')::integer;
        v_tid := (p_items->0->>'id')::bigint;
        v_tok := (p_items->0->>'tok')::uuid;
        id := v_tid;
        detail := NULL;
        v_serial := queue_serial_hold(ARRAY[v_tid]);
        WITH gone AS (
            DELETE FROM queue_tasks x
             WHERE x.id = v_tid AND x.status || '' = 'processing' AND x.lease_token = v_tok AND x.lease_expires_at > queue_now()
               AND x.cancel_requested_at IS NULL
            RETURNING x.*
        )
        INSERT INTO queue_tasks_archive AS ar (id, queue, priority_group, status, payload, dedupe_key, attempts,
                                               max_attempts, lease_token, last_error, result, requeues, enqueued_at, finished_at, lease_end, archived_at,
                                               operator_action, operator_by, operator_reason, operator_at, serial_key)
        SELECT g.id, g.queue, g.priority_group, 'succeeded', g.payload, g.dedupe_key, g.attempts, g.max_attempts,
               g.lease_token, g.last_error, p_items->0->'res', g.requeues, g.enqueued_at, queue_now(), 'completed', queue_now(),
               g.operator_action, g.operator_by, g.operator_reason, g.operator_at, g.serial_key
          FROM gone g
        RETURNING ar.attempts, ar.finished_at INTO attempts, finished_at;
        IF FOUND THEN
            outcome := 'completed';
            status := 'succeeded';
            IF v_serial THEN
                PERFORM queue_serial_promote(array_agg(ar.queue), array_agg(ar.serial_key))
                   FROM queue_tasks_archive ar WHERE ar.id = v_tid;
            END IF;
        ELSIF queue_cancel_end(v_tid, v_tok) THEN
            -- A cancel was requested while this lease held the task: it ends cancelled; the holder must stop.
            outcome := 'cancelled';
            status := 'cancelled';
            finished_at := queue_now();
            detail := 'the task was cancelled while this lease held it: stop working on it';
        ELSE
            SELECT m.outcome, m.status, m.attempts, m.finished_at, m.detail
              INTO outcome, status, attempts, finished_at, detail
              FROM queue_settle_miss('complete', v_tid, v_tok) m;
        END IF;
        RETURN NEXT;
        RETURN;
    END IF;
    -- The first item of every task id, keyed by id.
    SELECT coalesce(jsonb_object_agg(f.tid::text, jsonb_build_object('i', f.i, 'tok', f.tok, 'res', f.res)), '{}'),
           coalesce(array_agg(f.tid ORDER BY f.tid), '{}')
      INTO v_map, v_ids
      FROM (SELECT DISTINCT ON ((e->>'id')::bigint) (e->>'i')::integer AS i, (e->>'id')::bigint AS tid,
                   e->>'tok' AS tok, e->'res' AS res
              FROM jsonb_array_elements(p_items) AS e
             ORDER BY (e->>'id')::bigint, (e->>'i')::integer) f;
    v_lock_timeout := current_setting('lock_timeout');
    v_deadline := ol_lock_deadline();
    v_serial := queue_serial_hold(v_ids);
    PERFORM ol_lock_budget(v_deadline);
    -- Rows are found by id (primary key) and locked in id order first (the one global lock order of
    -- every statement that locks several task rows); the lease test is written so that the planner
    -- never scans the lease index instead, and the status test is written (status || '') so that it
    -- does not match the lease index's predicate (status = 'processing'): with statistics taken while
    -- few tasks were processing, the planner read that whole index (every processing task of every
    -- queue, 4,000 rows for a batch of 1 in one measurement) rather than the primary key.
    -- The locked ids are taken once, as an array, and the delete looks them up by primary key: no
    -- join for the planner to get wrong. Written as a semi join (x.id IN (locking subquery)) with
    -- the same stale estimate (one row), the locking scan ran again for every deleted row (1.1 s
    -- for a batch of 1,000 in one measurement); joined to the locked rows, it compared every pair.
    WITH lk AS MATERIALIZED (
        SELECT y.id FROM queue_tasks y
         WHERE y.id = ANY (v_ids) AND y.status || '' = 'processing'
           AND y.lease_token = (v_map->(y.id::text)->>'tok')::uuid
           AND y.lease_expires_at - queue_now() > interval '0'
         ORDER BY y.id FOR UPDATE
    ), gone AS (
        DELETE FROM queue_tasks x
         WHERE x.id = ANY (ARRAY(SELECT lk.id FROM lk))
           AND x.status || '' = 'processing'
           AND x.lease_token = (v_map->(x.id::text)->>'tok')::uuid
           AND x.lease_expires_at - queue_now() > interval '0'
           AND x.cancel_requested_at IS NULL
        RETURNING x.*
    ), moved AS (
        INSERT INTO queue_tasks_archive AS ar (id, queue, priority_group, status, payload, dedupe_key, attempts,
                                               max_attempts, lease_token, last_error, result, requeues, enqueued_at, finished_at, lease_end, archived_at,
                                               operator_action, operator_by, operator_reason, operator_at, serial_key)
        SELECT g.id, g.queue, g.priority_group, 'succeeded', g.payload, g.dedupe_key, g.attempts, g.max_attempts,
               g.lease_token, g.last_error, v_map->(g.id::text)->'res', g.requeues, g.enqueued_at, queue_now(), 'completed', queue_now(),
               g.operator_action, g.operator_by, g.operator_reason, g.operator_at, g.serial_key
          FROM gone g
        RETURNING ar.id, ar.attempts, ar.finished_at
    )
    SELECT coalesce(array_agg((v_map->(mv.id::text)->>'i')::integer), '{}'), coalesce(array_agg(mv.id), '{}'),
           coalesce(array_agg(mv.attempts), '{}'), coalesce(array_agg(mv.finished_at), '{}')
      INTO v_i, v_id, v_att, v_fin
      FROM moved mv;
    RETURN QUERY
    SELECT u.i, u.tid, 'completed'::text, 'succeeded'::text, u.att, u.fin, NULL::text
      FROM unnest(v_i, v_id, v_att, v_fin) AS u(i, tid, att, fin);

    IF v_serial THEN
        PERFORM queue_serial_promote(array_agg(ar.queue), array_agg(ar.serial_key))
           FROM queue_tasks_archive ar WHERE ar.id = ANY (v_id) AND ar.serial_key IS NOT NULL;
    END IF;
    IF cardinality(v_i) = jsonb_array_length(p_items) THEN
        PERFORM set_config('lock_timeout', v_lock_timeout, true);
        RETURN;
    END IF;
    -- The rest, one by one: lost leases (say why) and repeated ids (the first item already decided).
    FOR it IN
        SELECT (e->>'i')::integer AS i, (e->>'id')::bigint AS tid, (e->>'tok')::uuid AS tok, e->'res' AS res
          FROM jsonb_array_elements(p_items) AS e
         WHERE NOT EXISTS (SELECT 1 FROM unnest(v_i) AS d(i) WHERE d.i = (e->>'i')::integer)
         ORDER BY (e->>'id')::bigint, (e->>'i')::integer
    LOOP
        idx := it.i;
        id := it.tid;
        detail := NULL;
        finished_at := NULL;
        PERFORM ol_lock_budget(v_deadline);
        WITH gone AS (
            DELETE FROM queue_tasks x
             WHERE x.id = it.tid AND x.status || '' = 'processing' AND x.lease_token = it.tok AND x.lease_expires_at > queue_now()
               AND x.cancel_requested_at IS NULL
            RETURNING x.*
        )
        INSERT INTO queue_tasks_archive AS ar (id, queue, priority_group, status, payload, dedupe_key, attempts,
                                               max_attempts, lease_token, last_error, result, requeues, enqueued_at, finished_at, lease_end, archived_at,
                                               operator_action, operator_by, operator_reason, operator_at, serial_key)
        SELECT g.id, g.queue, g.priority_group, 'succeeded', g.payload, g.dedupe_key, g.attempts, g.max_attempts,
               g.lease_token, g.last_error, it.res, g.requeues, g.enqueued_at, queue_now(), 'completed', queue_now(),
               g.operator_action, g.operator_by, g.operator_reason, g.operator_at, g.serial_key
          FROM gone g
        RETURNING ar.* INTO a;
        IF FOUND THEN
            outcome := 'completed';
            status := 'succeeded';
            attempts := a.attempts;
            finished_at := a.finished_at;
            IF a.serial_key IS NOT NULL THEN
                PERFORM queue_serial_promote(ARRAY[a.queue], ARRAY[a.serial_key]);
            END IF;
        ELSIF queue_cancel_end(it.tid, it.tok) THEN
            -- A cancel was requested while this lease held the task: it ends cancelled; the holder must stop.
            outcome := 'cancelled';
            status := 'cancelled';
            finished_at := queue_now();
            detail := 'the task was cancelled while this lease held it: stop working on it';
        ELSE
            SELECT m.outcome, m.status, m.attempts, m.finished_at, m.detail
              INTO outcome, status, attempts, finished_at, detail
              FROM queue_settle_miss('complete', it.tid, it.tok) m;
        END IF;
        RETURN NEXT;
    END LOOP;
    PERFORM set_config('lock_timeout', v_lock_timeout, true);
END $$;
