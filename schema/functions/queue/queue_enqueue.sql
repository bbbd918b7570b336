-- Enqueue a batch. p_items: [{"i": item index, "q": queue, "g": priority group, "p": payload (json),
-- "k": dedupe key or null, "at": not-before time (ISO-8601) or null, "d": delay in seconds or null,
-- "m": max attempts or null (5), "n": false = no notification, "t": false = leave untagged,
-- and at most one dedupe-key mode, each needing "k": "r": on duplicate key, 'keep' (default) |
-- 'payload' | 'payload_run_at'; "w": throttle window in seconds; "b": debounce window in seconds;
-- "s": serial key or null}].
-- run_at = the latest of now, "at", now + "d" and now + "b".
-- Answers one row per item; outcome (ENQUEUE_OUTCOMES in src/queue/states.ts):
--   enqueued         this call wrote a new task (deduplicated = false);
--   duplicate        the key's live task (pending or processing) is returned unchanged;
--   replaced         "r" or "b": the key's task was pending; its payload is the item's now ("r":
--                    'payload_run_at' and "b": its run_at too; a run_at in the future drops its
--                    fairness tag, the first claim after it is due tags it (queue_tag_due); a task that
--                    stays due keeps its tag, its place in line). Priority group and max attempts are
--                    the task's own. When the run time moved earlier the queue is notified as for a
--                    new task;
--   kept_processing  "r": the key's task is being worked on: it keeps its payload, nothing written
--                    (a replace never changes a task a worker holds);
--   throttled        "w": a task was enqueued with this key through a throttled enqueue less than its
--                    window ago (window = [that enqueue's queue_now(), + "w"), recorded in
--                    queue_throttle_windows, so a task that finished, was archived or purged still
--                    counts): nothing written; id is that task, enqueued_at the window's start,
--                    window_ends_at its end, status, payload, run_at, attempts and max_attempts null.
--                    Outside a window a throttled item is a keep-first enqueue (enqueued, opening a
--                    new window, or duplicate, which opens none).
--   "b" (debounce) is a replace of payload and run_at = now + "b" (trailing debounce: every enqueue
--   while the task is pending pushes it); when the key's task is already processing, the running
--   task gives its key up (dedupe_key null, superseded_dedupe_key = the key) and the item becomes a
--   new task (enqueued): the last payload always runs after the last enqueue.
-- Items with a mode are applied one by one, in (queue, key, item) order, each as if enqueued alone
-- after those before it, before the batch's other keyed items; they lock the key's live task
-- (FOR UPDATE; a claim skips a locked task, a claim that locked it first has committed when the lock
-- is granted and the status is read again) and a throttled key's window row.
-- Fast path, one statement: when no item has a dedupe key and none says "t": false, the items are
-- unpacked, each (queue, group) of the ready items reserves its consecutive tags (the queue's virtual
-- time read first, queue_vtime; the group's tag row locked with FOR UPDATE SKIP LOCKED, or created
-- when missing; base = max(virtual time, last tag), step = 1 / weight, as queue_take_tags does), the
-- tasks are inserted with their tags and the tag rows moved on, all in the same statement. A group
-- whose tag row another transaction holds gets no tags (its items stay untagged, as below).
-- Otherwise, set-based, so its cost grows linearly with the batch (no nested loop over the batch):
--   1. the items are unpacked once into arrays (jsonb_array_elements WITH ORDINALITY);
--   2. items without a dedupe key: one INSERT; their ids are drawn from the identity sequence
--      first, so each row maps back to its item by id (an index lookup, not a join filter);
--   3. items with a dedupe key: one INSERT ... ON CONFLICT DO NOTHING of the first item per
--      (queue, dedupe key), in (queue, dedupe key) order (one lock order for concurrent batches with
--      overlapping keys); then every keyed item is answered with the live task (pending or
--      processing) of its key, found through the unique dedupe index: deduplicated = false only
--      for the item whose row this call inserted. A key whose live task settled between the two
--      statements is inserted again (the loop ends when every key has its live task).
--   4. fairness tags (docs/queue.md, "Scheduling"): ready items get consecutive tags of their
--      group, reserved once per (queue, group) of the batch (queue_take_tags, which locks the
--      group's tag row until commit but never waits for it). Delayed items, items of a group whose
--      tag row another transaction holds, and items enqueued inside the caller's own longer
--      transaction stay untagged: the first claim after they are due tags them (queue_tag_due).
-- One statement, so the batch is all or nothing.
-- Sends pg_notify(queue_channel(queue), payload) once per queue that gained a task: payload = the
-- queue name when a task that is claimable now was added, '' when only delayed tasks were (a
-- listener then only needs to re-read the due time). Like the rows, it is delivered only on commit.
-- Items with "n": false ask for no notification: a queue all of whose items say so is not notified.
-- A dedupe key never joins a task that can no longer run (docs/queue.md, "Dedupe keys"): before the
-- keyed items are inserted, a live task of their key whose attempts are used up (pending, or
-- processing with an expired lease) is sent dead first, as the next claim or lease sweep would
-- send it (dead_reason attempts_exhausted or lease_expired_at_max, its last_error saying an
-- enqueue of its key found it), and the new item becomes a new task (deduplicated = false).
-- Serial keys ("s"; docs/queue.md, "One at a time per key"): the batch's serial keys are locked
-- first (queue_serial_lock, sorted, within the call's lock budget), before any task row. A task this
-- call wrote with a serial key is its key's head when no other task of the key is in queue_tasks
-- with a lower id (pending, processing, retrying or dead): it is left untagged and the first claim
-- after it is due tags it (queue_tag_due). Otherwise it is stored blocked (serial_wait): pending,
-- untagged, out of every index a claim reads, and its queue is not notified for it; it becomes the
-- head when the ones ahead of it have left (queue_serial_promote). Enqueue order is id order: in
-- one batch, items without a dedupe key get their ids before items with one. A duplicate or
-- replaced item changes nothing about serial keys (the key's existing task keeps its own).
-- Refused for the whole batch (SQLSTATE 22023, nothing written), as the node refuses it for the
-- item (src/queue/enqueue.ts): a queue name, group or dedupe key outside the rules of key-like
-- text (a serial key: as a dedupe key), max attempts outside 1 .. 1000, a delay outside 0 .. 31536000 seconds.
-- Lock waits (a concurrent enqueue's uncommitted task with the same dedupe key, a task row another
-- transaction holds): one budget for the call (ol_lock_deadline), about one lock_timeout in all.
CREATE OR REPLACE FUNCTION queue_enqueue(p_items jsonb)
RETURNS TABLE (
    idx integer, id bigint, deduplicated boolean, queue text, priority_group text, status text,
    payload jsonb, dedupe_key text, run_at timestamptz, attempts integer, max_attempts integer,
    enqueued_at timestamptz, outcome text, window_ends_at timestamptz
)
LANGUAGE plpgsql
SET search_path FROM CURRENT
AS $$
#variable_conflict use_column
DECLARE
    v_seq regclass := pg_get_serial_sequence('queue_tasks', 'id')::regclass;
    -- The batch, unpacked once.
    a_i integer[]; a_q text[]; a_g text[]; a_p jsonb[]; a_k text[]; a_at timestamptz[]; a_m integer[];
    -- Answers: item index, task id, deduplicated, and the task's row as this call saw it (kept
    -- here, not read again at the end: a worker may complete and archive the task meanwhile).
    r_i integer[] := '{}'; r_id bigint[] := '{}'; r_dup boolean[] := '{}';
    r_q text[] := '{}'; r_g text[] := '{}'; r_st text[] := '{}'; r_p jsonb[] := '{}'; r_k text[] := '{}';
    r_run timestamptz[] := '{}'; r_att integer[] := '{}'; r_m integer[] := '{}'; r_enq timestamptz[] := '{}';
    -- Keyed items still without an answer, and the ids drawn for the first item of each key.
    w_i integer[]; w_q text[]; w_g text[]; w_p jsonb[]; w_k text[]; w_at timestamptz[]; w_m integer[];
    w_tid bigint[];
    n_i integer[]; n_id bigint[]; n_dup boolean[];
    n_q text[]; n_g text[]; n_st text[]; n_p jsonb[]; n_k text[]; n_run timestamptz[]; n_att integer[]; n_m integer[]; n_enq timestamptz[];
    v_ready text[];
    v_delayed text[];
    v_q text;
    v_rounds integer := 0;
    v_quiet text[];
    -- Tags reserved per (queue, group): base and step (null: the group's tag row was busy).
    t_q text[] := '{}'; t_g text[] := '{}'; t_n integer[] := '{}'; t_v double precision[] := '{}';
    t_base double precision[] := '{}'; t_step double precision[] := '{}';
    v_base double precision; v_step double precision; v_j integer; v_tag boolean;
    t_ids jsonb[];
    v_lock_timeout text := current_setting('lock_timeout');
    v_deadline timestamptz;
    -- Items with a dedupe-key mode ("r", "w" or "b"), answered one by one (see the header): their
    -- indexes, the answer code of each answer (null: enqueued or duplicate, from r_dup; 'R' replaced,
    -- 'P' kept_processing, 'T' throttled) and a throttle window's end; queues whose pending task a
    -- replace moved earlier (notified like a new task).
    v_mode_i integer[];
    v_checked record;
    r_o text[] := '{}'; r_we timestamptz[] := '{}';
    v_moved_ready text[] := '{}'; v_moved_delayed text[] := '{}';
    it record;
    v_t queue_tasks%ROWTYPE;
    v_tw queue_throttle_windows%ROWTYPE;
    v_tid bigint;
    v_done boolean;
    v_old_run timestamptz;
    -- Serial keys per item (null: none) and the tasks this call stored blocked.
    a_s text[];
    v_blocked bigint[] := '{}';
    s_id bigint[]; s_k text[];
    -- The caller's enable_seqscan and jit, restored at the end of the general path (see there).
    v_seqscan text;
    v_jit text;
    -- Live tasks of the batch's keys that may be stale (sent dead first, below).
    v_stale bigint[];
BEGIN
    -- What the node refuses is refused here too (docs/security.md, "What a caller can pass").
    -- In the same statement: the items with a dedupe-key mode (none: no further statement for them).
    SELECT ol_check_texts('queue name', x.i, x.q, 'name', 200) AS c1, ol_check_texts('priority group', x.i, x.g, 'name', 100) AS c2,
           ol_check_texts('dedupe key', x.i, x.k, 'dedupe_key', 512) AS c3,
           ol_check_numbers('max attempts', x.i, x.m, 1, 1000, true) AS c4,
           ol_check_texts('serial key', x.i, x.s, 'dedupe_key', 512) AS c6,
           ol_check_numbers('the delay (seconds)', x.i, x.d, 0, 31536000, false) AS c5, x.mi
      INTO v_checked
      FROM (SELECT array_agg((e->>'i')::integer) AS i, array_agg(e->>'q') AS q, array_agg(e->>'g') AS g, array_agg(e->>'k') AS k,
                   array_agg(e->>'s') AS s,
                   array_agg(coalesce((e->>'m')::double precision, 5)) AS m,
                   array_agg(coalesce((e->>'d')::double precision, 0)) AS d,
                   array_agg((e->>'i')::integer) FILTER (WHERE coalesce(e->>'r', 'keep') <> 'keep' OR e->>'w' IS NOT NULL OR e->>'b' IS NOT NULL) AS mi
              FROM jsonb_array_elements(p_items) AS e) x;
    v_mode_i := v_checked.mi;
    -- Dedupe-key modes (LIMITS.enqueueThrottleSeconds / enqueueDebounceSeconds in src/limits.ts).
    -- Only items that name one are looked at, and the fast path below is taken only without a key.
    IF v_mode_i IS NOT NULL THEN
        PERFORM ol_check_numbers('the throttle window (seconds)', x.wi, x.w, 1, 31536000, false),
                ol_check_numbers('the debounce window (seconds)', x.bi, x.b, 1, 31536000, false)
          FROM (SELECT array_agg((e->>'i')::integer) FILTER (WHERE e->>'w' IS NOT NULL) AS wi,
                       array_agg((e->>'w')::double precision) FILTER (WHERE e->>'w' IS NOT NULL) AS w,
                       array_agg((e->>'i')::integer) FILTER (WHERE e->>'b' IS NOT NULL) AS bi,
                       array_agg((e->>'b')::double precision) FILTER (WHERE e->>'b' IS NOT NULL) AS b
                  FROM jsonb_array_elements(p_items) AS e) x;
        SELECT (e->>'i')::integer INTO v_tid
          FROM jsonb_array_elements(p_items) AS e
         WHERE coalesce(e->>'r', 'keep') NOT IN ('keep', 'payload', 'payload_run_at')
            OR ((e->>'i')::integer = ANY (v_mode_i)
                AND (nullif(e->>'k', '') IS NULL
                     OR (coalesce(e->>'r', 'keep') <> 'keep')::integer + (e->>'w' IS NOT NULL)::integer + (e->>'b' IS NOT NULL)::integer > 1))
         LIMIT 1;
        IF FOUND THEN
            RAISE EXCEPTION 'item %: on duplicate must be keep, payload or payload_run_at; it, a throttle and a debounce window each need a dedupe key, and at most one of them is given', v_tid
                USING ERRCODE = '22023';
        END IF;
        v_tid := NULL;
    END IF;
    -- The fast path: no dedupe key, no serial key, no "t": false (see the header). ids are drawn per item first, so
    -- each answer is the item's own values with its id (nothing is read back).
    IF NOT EXISTS (SELECT 1 FROM jsonb_array_elements(p_items) AS e
                    WHERE nullif(e->>'k', '') IS NOT NULL OR nullif(e->>'s', '') IS NOT NULL OR (e->>'t')::boolean IS FALSE) THEN
        RETURN QUERY
        WITH it AS MATERIALIZED (
            SELECT (x.e->>'i')::integer AS i, x.e->>'q' AS q, x.e->>'g' AS g, coalesce(x.e->'p', '{}'::jsonb) AS p,
                   greatest(queue_now(), coalesce((x.e->>'at')::timestamptz, queue_now()),
                            queue_now() + make_interval(secs => greatest(coalesce((x.e->>'d')::double precision, 0), 0))) AS at,
                   coalesce((x.e->>'m')::integer, 5) AS m, nextval(v_seq) AS tid
              FROM jsonb_array_elements(p_items) WITH ORDINALITY AS x(e, o)
             ORDER BY x.o
        ), grp AS MATERIALIZED (
            -- Each (queue, group) of the ready items: how many, the queue's virtual time (read in this
            -- statement's snapshot, so before any reservation of it) and the group's step.
            SELECT r.q, r.g, r.n, queue_vtime(r.q) AS vt, 1.0::double precision / queue_group_weight(r.q, r.g) AS step
              FROM (SELECT it.q, it.g, count(*)::integer AS n FROM it WHERE it.at <= queue_now() GROUP BY it.q, it.g) r
        ), held AS MATERIALIZED (
            -- Their tag rows, locked until commit in (queue, group) order, never waited for.
            SELECT gt.queue, gt.priority_group, gt.last_tag FROM queue_group_tags gt
             WHERE (gt.queue, gt.priority_group) IN (SELECT grp.q, grp.g FROM grp)
             ORDER BY gt.queue, gt.priority_group
               FOR UPDATE SKIP LOCKED
        ), fresh AS (
            -- Groups without a tag row: created with this batch's reservation (last tag 0 before it).
            INSERT INTO queue_group_tags AS gt (queue, priority_group, last_tag, updated_at)
            SELECT grp.q, grp.g, round((greatest(grp.vt, 0) + grp.n * grp.step) * 1e6) / 1e6, queue_now() FROM grp
             WHERE NOT EXISTS (SELECT 1 FROM queue_group_tags x WHERE x.queue = grp.q AND x.priority_group = grp.g)
             ORDER BY grp.q, grp.g
            ON CONFLICT DO NOTHING
            RETURNING gt.queue, gt.priority_group
        ), tg AS MATERIALIZED (
            SELECT grp.q, grp.g, greatest(grp.vt, h.last_tag) AS base, grp.step, grp.n, true AS existed
              FROM grp JOIN held h ON h.queue = grp.q AND h.priority_group = grp.g
            UNION ALL
            SELECT grp.q, grp.g, greatest(grp.vt, 0), grp.step, grp.n, false
              FROM grp JOIN fresh f ON f.queue = grp.q AND f.priority_group = grp.g
        ), moved AS (
            UPDATE queue_group_tags gt SET last_tag = round((tg.base + tg.n * tg.step) * 1e6) / 1e6, updated_at = queue_now()
              FROM tg
             WHERE tg.existed AND gt.queue = tg.q AND gt.priority_group = tg.g
        ), ins AS (
            -- A ready item's tag: its group's base + step * its rank among the group's ready items of
            -- the batch, rounded to a millionth (see the general path below).
            INSERT INTO queue_tasks AS t (id, queue, priority_group, status, payload, run_at, max_attempts, vtag, enqueued_at, updated_at)
            OVERRIDING SYSTEM VALUE
            SELECT r.tid, r.q, r.g, 'pending', r.p, r.at, r.m, round((tg.base + tg.step * r.rk) * 1e6) / 1e6, queue_now(), queue_now()
              FROM (SELECT it.*, CASE WHEN it.at <= queue_now()
                                      THEN row_number() OVER (PARTITION BY it.q, it.g, it.at <= queue_now() ORDER BY it.i) END AS rk
                      FROM it) r
              LEFT JOIN tg ON tg.q = r.q AND tg.g = r.g
            RETURNING t.id
        )
        SELECT it.i, it.tid, false, it.q, it.g, 'pending'::text, it.p, NULL::text, it.at, 0, it.m, queue_now(),
               'enqueued'::text, NULL::timestamptz
          FROM it
         WHERE EXISTS (SELECT 1 FROM ins WHERE ins.id = it.tid)
         ORDER BY it.i;
        -- One notification per queue (see the header): the queue name when a task is claimable now,
        -- '' when all of its tasks are delayed; none for a queue all of whose items say "n": false.
        PERFORM pg_notify(queue_channel(n.q), CASE WHEN n.ready THEN n.q ELSE '' END)
           FROM (SELECT e->>'q' AS q,
                        bool_or(greatest(queue_now(), coalesce((e->>'at')::timestamptz, queue_now()),
                                         queue_now() + make_interval(secs => greatest(coalesce((e->>'d')::double precision, 0), 0))) <= queue_now()) AS ready,
                        bool_and((e->>'n')::boolean IS FALSE) AS quiet
                   FROM jsonb_array_elements(p_items) AS e
                  GROUP BY e->>'q'
                  ORDER BY 2 DESC, 1) n
          WHERE NOT n.quiet;
        RETURN;
    END IF;

    SELECT array_agg((e->>'i')::integer ORDER BY o), array_agg(e->>'q' ORDER BY o), array_agg(e->>'g' ORDER BY o),
           array_agg(coalesce(e->'p', '{}'::jsonb) ORDER BY o), array_agg(nullif(e->>'k', '') ORDER BY o),
           array_agg(greatest(queue_now(), coalesce((e->>'at')::timestamptz, queue_now()),
                              queue_now() + make_interval(secs => greatest(coalesce((e->>'d')::double precision, 0), 0)),
                              queue_now() + make_interval(secs => coalesce((e->>'b')::double precision, 0))) ORDER BY o),
           array_agg(coalesce((e->>'m')::integer, 5) ORDER BY o), array_agg(nullif(e->>'s', '') ORDER BY o)
      INTO a_i, a_q, a_g, a_p, a_k, a_at, a_m, a_s
      FROM jsonb_array_elements(p_items) WITH ORDINALITY AS x(e, o);
    IF a_i IS NULL THEN
        RETURN;
    END IF;
    -- The general path's statements find tasks by primary key or by the dedupe index, item by item,
    -- whatever the table's statistics say. PL/pgSQL keeps each statement's plan for the connection,
    -- and plans made while the table was small joined the batch against scans of queue_tasks: the
    -- answer lookup hashed every live keyed task of every queue, the blocking of serial tasks read
    -- queue_tasks_untagged_group_idx, for as long as the connection lived (25,000 live keyed
    -- tasks: a 100-item keyed enqueue 54 ms against 9). So sequential scans are priced out here
    -- (set for this transaction, put back before the answers are returned), each per-item lookup is
    -- a LATERAL probe driven from the batch, each UPDATE names its ids (= ANY) and tests
    -- status || '' so that no partial index's predicate follows from it (the primary key is left).
    -- Not on the fast path above: it reads no task.
    -- JIT off with it: a statement whose only path were a scan would otherwise carry the priced-out
    -- cost and be compiled on every call.
    v_seqscan := current_setting('enable_seqscan');
    v_jit := current_setting('jit');
    PERFORM set_config('enable_seqscan', 'off', true), set_config('jit', 'off', true);
    -- Serial keys: locked before any task row, in lock-key order (see the header).
    IF EXISTS (SELECT 1 FROM unnest(a_s) AS x(s) WHERE x.s IS NOT NULL) THEN
        v_deadline := ol_lock_deadline();
        PERFORM pg_advisory_xact_lock(l.lk)
           FROM (SELECT DISTINCT queue_serial_lock(x.q, x.s) AS lk FROM unnest(a_q, a_s) AS x(q, s) WHERE x.s IS NOT NULL) l
          ORDER BY l.lk;
    END IF;

    -- Fair-queuing tags (docs/queue.md, "Scheduling"): once per (queue, group) of the batch's
    -- ready items without a dedupe key, in (queue, group) order, reserve consecutive tags
    -- (queue_take_tags, never waiting). Not when an item says "t": false (src/queue/enqueue.ts sends
    -- it when called with a client that may be inside the caller's longer transaction: the tag rows
    -- would stay locked until that commits). Untagged ready items are tagged by the next claim
    -- (queue_tag_due).
    v_tag := NOT EXISTS (SELECT 1 FROM jsonb_array_elements(p_items) AS e WHERE (e->>'t')::boolean IS FALSE);
    IF v_tag THEN
        SELECT coalesce(array_agg(x.q ORDER BY x.q, x.g), '{}'), coalesce(array_agg(x.g ORDER BY x.q, x.g), '{}'),
               coalesce(array_agg(x.n ORDER BY x.q, x.g), '{}'), coalesce(array_agg(queue_vtime(x.q) ORDER BY x.q, x.g), '{}')
          INTO t_q, t_g, t_n, t_v
          FROM (SELECT y.q, y.g, count(*)::integer AS n
                  FROM unnest(a_q, a_g, a_k, a_at, a_s) AS y(q, g, k, at, s)
                 WHERE y.k IS NULL AND y.s IS NULL AND y.at <= queue_now()
                 GROUP BY y.q, y.g) x;
        FOR v_j IN 1..cardinality(t_q) LOOP
            SELECT x.base, x.step INTO v_base, v_step FROM queue_take_tags(t_q[v_j], t_g[v_j], t_n[v_j], t_v[v_j]) x;
            t_base := t_base || v_base;
            t_step := t_step || v_step;
        END LOOP;
    END IF;

    -- Items without a dedupe key: one INSERT, ids drawn first; a ready item's tag is its group's
    -- base + step * (its rank among the group's ready items of the batch); tags are rounded to a millionth
    -- so that equal virtual times compare equal (0.2 * 6 = 0.2 + 2 * 0.5) and tie by id.
    WITH u AS MATERIALIZED (
        SELECT x.i, x.q, x.g, x.p, x.at, x.m, nextval(v_seq) AS tid,
               CASE WHEN x.at <= queue_now() AND x.s IS NULL
                    THEN row_number() OVER (PARTITION BY x.q, x.g, x.at <= queue_now() AND x.s IS NULL ORDER BY x.i) END AS rk
          FROM unnest(a_i, a_q, a_g, a_p, a_k, a_at, a_m, a_s) AS x(i, q, g, p, k, at, m, s)
         WHERE x.k IS NULL
    ), ins AS (
        INSERT INTO queue_tasks AS t (id, queue, priority_group, status, payload, run_at, max_attempts, vtag, enqueued_at, updated_at)
        OVERRIDING SYSTEM VALUE
        SELECT u.tid, u.q, u.g, 'pending', u.p, u.at, u.m, round((tg.base + tg.step * u.rk) * 1e6) / 1e6, queue_now(), queue_now()
          FROM u
          LEFT JOIN unnest(t_q, t_g, t_base, t_step) AS tg(q, g, base, step) ON tg.q = u.q AND tg.g = u.g
        RETURNING t.*
    )
    SELECT coalesce(array_agg(u.i), '{}'), coalesce(array_agg(s.id), '{}'), coalesce(array_agg(false), '{}'),
           coalesce(array_agg(s.queue), '{}'), coalesce(array_agg(s.priority_group), '{}'), coalesce(array_agg(s.status), '{}'),
           coalesce(array_agg(s.payload), '{}'), coalesce(array_agg(s.dedupe_key), '{}'), coalesce(array_agg(s.run_at), '{}'),
           coalesce(array_agg(s.attempts), '{}'), coalesce(array_agg(s.max_attempts), '{}'), coalesce(array_agg(s.enqueued_at), '{}')
      INTO r_i, r_id, r_dup, r_q, r_g, r_st, r_p, r_k, r_run, r_att, r_m, r_enq
      FROM ins s JOIN u ON u.tid = s.id;
    r_o := array_fill(NULL::text, ARRAY[cardinality(r_i)]);
    r_we := array_fill(NULL::timestamptz, ARRAY[cardinality(r_i)]);

    -- Items with a dedupe key: all of them wait for an answer.
    SELECT array_agg(x.i), array_agg(x.q), array_agg(x.g), array_agg(x.p), array_agg(x.k), array_agg(x.at), array_agg(x.m)
      INTO w_i, w_q, w_g, w_p, w_k, w_at, w_m
      FROM unnest(a_i, a_q, a_g, a_p, a_k, a_at, a_m) AS x(i, q, g, p, k, at, m)
     WHERE x.k IS NOT NULL;
    -- A live task of one of these keys that can no longer run is sent dead first (see the header),
    -- locked in id order (the global lock order) within the call's lock budget; the lock re-checks
    -- it, so a task a concurrent claim or sweep just changed is judged as it is now.
    IF w_i IS NOT NULL THEN
        v_deadline := coalesce(v_deadline, ol_lock_deadline());
        PERFORM ol_lock_budget(v_deadline);
        -- Each key's live task, probed through the dedupe index (unlocked: the lock below re-checks).
        v_stale := ARRAY(
            SELECT l.id
              FROM (SELECT DISTINCT x.q, x.k FROM unnest(w_q, w_k) AS x(q, k)) x
             CROSS JOIN LATERAL (
                    SELECT t.id, t.status, t.attempts, t.max_attempts, t.lease_expires_at FROM queue_tasks t
                     WHERE t.queue = x.q AND t.dedupe_key = x.k AND t.status IN ('pending', 'processing')
                     LIMIT 1) l
             WHERE l.attempts >= l.max_attempts AND (l.status = 'pending' OR l.lease_expires_at <= queue_now()));
        WITH stale AS (
            SELECT t.id FROM queue_tasks t
             WHERE t.id = ANY (v_stale)
               AND t.status || '' IN ('pending', 'processing') AND t.attempts >= t.max_attempts
               AND (t.status || '' = 'pending' OR t.lease_expires_at <= queue_now())
             ORDER BY t.id
               FOR UPDATE
        )
        UPDATE queue_tasks t
           SET status = 'dead', dead_at = queue_now(), updated_at = queue_now(), lease_expires_at = NULL,
               dead_reason = CASE WHEN t.status = 'pending' THEN 'attempts_exhausted' ELSE 'lease_expired_at_max' END,
               lease_end = CASE WHEN t.status = 'pending' THEN t.lease_end ELSE 'expired' END,
               last_error = CASE WHEN t.status = 'pending'
                                 THEN 'attempts exhausted before a claim (' || t.attempts || ' of ' || t.max_attempts || ' used)'
                                      || coalesce('; last error: ' || t.last_error, '')
                                 ELSE 'lease expired at max attempts (' || t.attempts || ' of ' || t.max_attempts || ')' END
                            || '; found by an enqueue of its dedupe key, which became a new task'
          FROM stale
         WHERE t.id = stale.id;
    END IF;

    -- Items with a dedupe-key mode, one by one in (queue, key, item) order (one lock order for
    -- concurrent batches), each as if enqueued alone after the ones before it (see the header).
    IF v_mode_i IS NOT NULL THEN
        FOR it IN
            SELECT x.i, x.q, x.g, x.p, x.k, x.at, x.m, coalesce(e->>'r', 'keep') AS r,
                   (e->>'w')::double precision AS w, (e->>'b')::double precision AS b
              FROM unnest(a_i, a_q, a_g, a_p, a_k, a_at, a_m) AS x(i, q, g, p, k, at, m)
              JOIN jsonb_array_elements(p_items) AS e ON (e->>'i')::integer = x.i
             WHERE x.i = ANY (v_mode_i)
             ORDER BY x.q, x.k, x.i
        LOOP
            v_done := false;
            v_rounds := 0;
            -- Throttle: the key's window row, locked (created first when missing) so that concurrent
            -- throttled enqueues of one key decide one after the other. An open window answers throttled.
            IF it.w IS NOT NULL THEN
                PERFORM ol_lock_budget(v_deadline);
                INSERT INTO queue_throttle_windows AS tw (queue, dedupe_key, started_at, ends_at)
                VALUES (it.q, it.k, '-infinity', '-infinity')
                ON CONFLICT (queue, dedupe_key) DO NOTHING;
                SELECT * INTO v_tw FROM queue_throttle_windows tw WHERE tw.queue = it.q AND tw.dedupe_key = it.k FOR UPDATE;
                IF v_tw.ends_at > queue_now() THEN
                    r_i := r_i || it.i; r_id := r_id || v_tw.task_id; r_dup := r_dup || true;
                    r_q := r_q || it.q; r_g := r_g || it.g; r_st := r_st || NULL::text; r_p := r_p || NULL::jsonb;
                    r_k := r_k || it.k; r_run := r_run || NULL::timestamptz; r_att := r_att || NULL::integer;
                    r_m := r_m || NULL::integer; r_enq := r_enq || v_tw.started_at;
                    r_o := r_o || 'T'::text; r_we := r_we || v_tw.ends_at;
                    CONTINUE;
                END IF;
            END IF;
            WHILE NOT v_done LOOP
                v_rounds := v_rounds + 1;
                IF v_rounds > 100 THEN
                    RAISE EXCEPTION 'queue_enqueue: dedupe key kept settling during the call (100 rounds)';
                END IF;
                PERFORM ol_lock_budget(v_deadline);
                -- The key's live task, locked: a claim that took it first has committed by now and the
                -- lock re-reads its status; a claim that comes later skips it until this commits.
                SELECT * INTO v_t FROM queue_tasks x
                 WHERE x.queue = it.q AND x.dedupe_key = it.k AND x.status IN ('pending', 'processing')
                   FOR UPDATE;
                IF FOUND AND v_t.status = 'pending' AND (it.r <> 'keep' OR it.b IS NOT NULL) THEN
                    -- Replace: the payload; with a new run time too ("payload_run_at", debounce), which
                    -- drops the task's fairness tag when it is no longer due (the first claim after it
                    -- is due tags it, queue_tag_due) and keeps it when it stays due (its place in line).
                    v_old_run := v_t.run_at;
                    UPDATE queue_tasks x
                       SET payload = it.p, updated_at = queue_now(),
                           run_at = CASE WHEN it.r = 'payload' THEN x.run_at ELSE it.at END,
                           vtag = CASE WHEN it.r = 'payload' OR it.at <= queue_now() THEN x.vtag END
                     WHERE x.id = v_t.id
                    RETURNING x.* INTO v_t;
                    r_o := r_o || 'R'::text;
                    -- Moved earlier: listeners are told as for a new task (claimable now, or a new due time).
                    IF v_t.run_at < v_old_run AND v_t.run_at <= queue_now() THEN
                        v_moved_ready := v_moved_ready || it.q;
                    ELSIF v_t.run_at < v_old_run THEN
                        v_moved_delayed := v_moved_delayed || it.q;
                    END IF;
                ELSIF FOUND AND v_t.status = 'processing' AND it.b IS NOT NULL THEN
                    -- Debounce while the task runs: the running task keeps its payload and gives up
                    -- its key; the item becomes a new task (next round inserts it).
                    UPDATE queue_tasks x SET dedupe_key = NULL, superseded_dedupe_key = it.k, updated_at = queue_now()
                     WHERE x.id = v_t.id;
                    CONTINUE;
                ELSIF FOUND THEN
                    -- Kept: a processing task is never changed by a replace ('P'), a keyed task found
                    -- by a throttled item whose window has ended is a plain duplicate.
                    r_o := r_o || CASE WHEN v_t.status = 'processing' AND it.r <> 'keep' THEN 'P' END;
                ELSE
                    v_tid := nextval(v_seq);
                    INSERT INTO queue_tasks AS x (id, queue, priority_group, status, payload, dedupe_key, run_at, max_attempts, enqueued_at, updated_at)
                    OVERRIDING SYSTEM VALUE
                    VALUES (v_tid, it.q, it.g, 'pending', it.p, it.k, it.at, it.m, queue_now(), queue_now())
                    ON CONFLICT (queue, dedupe_key) WHERE dedupe_key IS NOT NULL AND status IN ('pending', 'processing')
                    DO NOTHING
                    RETURNING x.* INTO v_t;
                    -- A concurrent enqueue's task with the key committed meanwhile: decide again.
                    CONTINUE WHEN NOT FOUND;
                    r_o := r_o || NULL::text;
                    IF it.w IS NOT NULL THEN
                        UPDATE queue_throttle_windows tw
                           SET task_id = v_tid, started_at = queue_now(), ends_at = queue_now() + make_interval(secs => it.w)
                         WHERE tw.queue = it.q AND tw.dedupe_key = it.k;
                    END IF;
                END IF;
                v_done := true;
            END LOOP;
            r_i := r_i || it.i; r_id := r_id || v_t.id; r_dup := r_dup || (v_t.id IS DISTINCT FROM v_tid);
            r_q := r_q || v_t.queue; r_g := r_g || v_t.priority_group; r_st := r_st || v_t.status; r_p := r_p || v_t.payload;
            r_k := r_k || v_t.dedupe_key; r_run := r_run || v_t.run_at; r_att := r_att || v_t.attempts;
            r_m := r_m || v_t.max_attempts; r_enq := r_enq || v_t.enqueued_at; r_we := r_we || NULL::timestamptz;
            v_tid := NULL;
        END LOOP;
        -- The other keyed items go the set-based way below.
        SELECT array_agg(x.i), array_agg(x.q), array_agg(x.g), array_agg(x.p), array_agg(x.k), array_agg(x.at), array_agg(x.m)
          INTO w_i, w_q, w_g, w_p, w_k, w_at, w_m
          FROM unnest(w_i, w_q, w_g, w_p, w_k, w_at, w_m) AS x(i, q, g, p, k, at, m)
         WHERE NOT x.i = ANY (v_mode_i);
    END IF;
    WHILE w_i IS NOT NULL LOOP
        v_rounds := v_rounds + 1;
        PERFORM ol_lock_budget(v_deadline);
        IF v_rounds > 100 THEN
            RAISE EXCEPTION 'queue_enqueue: dedupe keys kept settling during the call (100 rounds)';
        END IF;
        -- The first waiting item per key gets an id drawn now and is inserted, in one lock order;
        -- a live task with the key wins (DO NOTHING).
        WITH w AS MATERIALIZED (
            SELECT x.o, x.i, x.q, x.g, x.p, x.k, x.at, x.m,
                   CASE WHEN row_number() OVER (PARTITION BY x.q, x.k ORDER BY x.i) = 1 THEN nextval(v_seq) END AS tid
              FROM unnest(w_i, w_q, w_g, w_p, w_k, w_at, w_m) WITH ORDINALITY AS x(i, q, g, p, k, at, m, o)
        ), ins AS (
            INSERT INTO queue_tasks AS t (id, queue, priority_group, status, payload, dedupe_key, run_at, max_attempts, enqueued_at, updated_at)
            OVERRIDING SYSTEM VALUE
            SELECT w.tid, w.q, w.g, 'pending', w.p, w.k, w.at, w.m, queue_now(), queue_now() FROM w WHERE w.tid IS NOT NULL ORDER BY w.q, w.k
            ON CONFLICT (queue, dedupe_key) WHERE dedupe_key IS NOT NULL AND status IN ('pending', 'processing')
            DO NOTHING
            RETURNING t.id
        )
        -- The drawn ids, in the order of the waiting arrays (zipped with them below).
        SELECT array_agg(w.tid ORDER BY w.o) INTO w_tid FROM w;
        -- Every waiting item gets the live task of its key, found through the unique dedupe index
        -- (a fresh snapshot: this is a new statement). deduplicated = false only where the live
        -- task is the row this call inserted for that item (its pre-drawn id).
        SELECT coalesce(array_agg(w.i) FILTER (WHERE t.id IS NOT NULL), '{}'),
               coalesce(array_agg(t.id) FILTER (WHERE t.id IS NOT NULL), '{}'),
               coalesce(array_agg(t.id IS DISTINCT FROM w.tid) FILTER (WHERE t.id IS NOT NULL), '{}'),
               coalesce(array_agg(t.queue) FILTER (WHERE t.id IS NOT NULL), '{}'),
               coalesce(array_agg(t.priority_group) FILTER (WHERE t.id IS NOT NULL), '{}'),
               coalesce(array_agg(t.status) FILTER (WHERE t.id IS NOT NULL), '{}'),
               coalesce(array_agg(t.payload) FILTER (WHERE t.id IS NOT NULL), '{}'),
               coalesce(array_agg(t.dedupe_key) FILTER (WHERE t.id IS NOT NULL), '{}'),
               coalesce(array_agg(t.run_at) FILTER (WHERE t.id IS NOT NULL), '{}'),
               coalesce(array_agg(t.attempts) FILTER (WHERE t.id IS NOT NULL), '{}'),
               coalesce(array_agg(t.max_attempts) FILTER (WHERE t.id IS NOT NULL), '{}'),
               coalesce(array_agg(t.enqueued_at) FILTER (WHERE t.id IS NOT NULL), '{}'),
               array_agg(w.i) FILTER (WHERE t.id IS NULL), array_agg(w.q) FILTER (WHERE t.id IS NULL),
               array_agg(w.g) FILTER (WHERE t.id IS NULL), array_agg(w.p) FILTER (WHERE t.id IS NULL),
               array_agg(w.k) FILTER (WHERE t.id IS NULL), array_agg(w.at) FILTER (WHERE t.id IS NULL),
               array_agg(w.m) FILTER (WHERE t.id IS NULL)
          INTO n_i, n_id, n_dup, n_q, n_g, n_st, n_p, n_k, n_run, n_att, n_m, n_enq, w_i, w_q, w_g, w_p, w_k, w_at, w_m
          FROM unnest(w_i, w_q, w_g, w_p, w_k, w_at, w_m, w_tid) AS w(i, q, g, p, k, at, m, tid)
          LEFT JOIN LATERAL (
                SELECT t.id, t.queue, t.priority_group, t.status, t.payload, t.dedupe_key, t.run_at, t.attempts,
                       t.max_attempts, t.enqueued_at
                  FROM queue_tasks t
                 WHERE t.queue = w.q AND t.dedupe_key = w.k AND t.status IN ('pending', 'processing')
                 LIMIT 1) t ON true;
        r_i := r_i || n_i;
        r_id := r_id || n_id;
        r_dup := r_dup || n_dup;
        r_q := r_q || n_q; r_g := r_g || n_g; r_st := r_st || n_st; r_p := r_p || n_p; r_k := r_k || n_k;
        r_run := r_run || n_run; r_att := r_att || n_att; r_m := r_m || n_m; r_enq := r_enq || n_enq;
        r_o := r_o || array_fill(NULL::text, ARRAY[cardinality(n_i)]);
        r_we := r_we || array_fill(NULL::timestamptz, ARRAY[cardinality(n_i)]);
        -- Keys whose live task settled in between are still waiting: insert again.
    END LOOP;

    -- Serial keys of the tasks this call wrote (the enqueued items: a duplicate or replaced task
    -- keeps its own), then which of them have a task of their key ahead, by id (see the header).
    IF EXISTS (SELECT 1 FROM unnest(a_s) AS x(s) WHERE x.s IS NOT NULL) THEN
        SELECT coalesce(array_agg(x.id), '{}'), coalesce(array_agg(y.s), '{}') INTO s_id, s_k
          FROM unnest(r_i, r_id, r_dup) AS x(i, id, dup)
          JOIN unnest(a_i, a_s) AS y(i, s) ON y.i = x.i
         WHERE NOT x.dup AND y.s IS NOT NULL;
        UPDATE queue_tasks t SET serial_key = n.s
          FROM unnest(s_id, s_k) AS n(id, s)
         WHERE t.id = ANY (s_id) AND t.id = n.id;
        -- Which of them have a task of their key ahead: each task by one primary-key probe, the task
        -- ahead by one probe of the serial-key index (LIMIT 1: neither is flattened or hashed, so the
        -- serial-key index never stands in for the primary key and is never read whole; o.id + 0: no
        -- range of the primary key instead). Plans made on a small table read the whole serial-key
        -- index, or about 48,000 ids per task.
        v_blocked := ARRAY(
            SELECT x.id
              FROM unnest(s_id) AS u(id)
             CROSS JOIN LATERAL (SELECT t.id, t.queue, t.serial_key FROM queue_tasks t
                                  WHERE t.id = u.id AND t.status || '' = 'pending' AND t.vtag IS NULL AND NOT t.serial_wait
                                  LIMIT 1) x
             CROSS JOIN LATERAL (SELECT 1 FROM queue_tasks o
                                  WHERE o.queue = x.queue AND o.serial_key = x.serial_key AND o.id + 0 < x.id
                                  LIMIT 1) ahead);
        UPDATE queue_tasks t SET serial_wait = true WHERE t.id = ANY (v_blocked);
    END IF;

    -- Keyed items this call inserted that are ready now: tagged the same way, per (queue, group) in
    -- order (the tag rows of groups tagged above are already this transaction's). Not serial ones.
    IF v_tag THEN
        -- Collected first: every virtual time is read before the first reservation.
        SELECT coalesce(array_agg(x.q ORDER BY x.q, x.g), '{}'), coalesce(array_agg(x.g ORDER BY x.q, x.g), '{}'),
               coalesce(array_agg(x.ids ORDER BY x.q, x.g), '{}'), coalesce(array_agg(queue_vtime(x.q) ORDER BY x.q, x.g), '{}')
          INTO t_q, t_g, t_ids, t_v
          FROM (SELECT y.q, y.g, jsonb_agg(y.id ORDER BY y.i) AS ids
                  FROM unnest(r_dup, r_k, r_q, r_g, r_run, r_id, r_i) AS y(dup, k, q, g, run, id, i)
                  JOIN unnest(a_i, a_s) AS z(i, s) ON z.i = y.i
                 WHERE NOT y.dup AND y.k IS NOT NULL AND y.run <= queue_now() AND z.s IS NULL
                 GROUP BY y.q, y.g) x;
        FOR v_j IN 1..cardinality(t_q) LOOP
            SELECT x.base, x.step INTO v_base, v_step
              FROM queue_take_tags(t_q[v_j], t_g[v_j], jsonb_array_length(t_ids[v_j]), t_v[v_j]) x;
            CONTINUE WHEN v_base IS NULL;
            UPDATE queue_tasks t SET vtag = round((v_base + v_step * u.o) * 1e6) / 1e6
              FROM jsonb_array_elements_text(t_ids[v_j]) WITH ORDINALITY AS u(tid, o)
             WHERE t.id = ANY (ARRAY(SELECT jsonb_array_elements_text(t_ids[v_j])::bigint)) AND t.id = u.tid::bigint
               AND t.status || '' = 'pending' AND t.vtag IS NULL;
        END LOOP;
    END IF;

    -- Which queues gained a task that is claimable now, or only delayed ones (for the notification).
    -- A task stored blocked (serial_wait) is not claimable: its queue is told when it is promoted.
    SELECT coalesce(array_agg(DISTINCT x.q) FILTER (WHERE NOT x.dup AND x.run <= queue_now()), '{}') || v_moved_ready,
           coalesce(array_agg(DISTINCT x.q) FILTER (WHERE NOT x.dup AND x.run > queue_now()), '{}') || v_moved_delayed
      INTO v_ready, v_delayed
      FROM unnest(r_dup, r_q, r_run, r_id) AS x(dup, q, run, id)
     WHERE NOT x.id = ANY (v_blocked);
    PERFORM set_config('enable_seqscan', v_seqscan, true), set_config('jit', v_jit, true);

    RETURN QUERY
    SELECT x.i, x.id, x.dup, x.q, x.g, x.st, x.p, x.k, x.run, x.att, x.m, x.enq,
           CASE WHEN x.o = 'T' THEN 'throttled' WHEN x.o = 'R' THEN 'replaced' WHEN x.o = 'P' THEN 'kept_processing'
                WHEN x.dup THEN 'duplicate' ELSE 'enqueued' END AS outcome,
           x.we
      FROM unnest(r_i, r_id, r_dup, r_q, r_g, r_st, r_p, r_k, r_run, r_att, r_m, r_enq, r_o, r_we)
           AS x(i, id, dup, q, g, st, p, k, run, att, m, enq, o, we)
     ORDER BY x.i;

    -- Notify option: a queue all of whose items say "n": false is not notified here (the caller
    -- notifies after its commit, or not at all; see "Notifications" in docs/queue.md).
    v_quiet := ARRAY(SELECT e->>'q' FROM jsonb_array_elements(p_items) AS e
                      GROUP BY e->>'q' HAVING bool_and((e->>'n')::boolean IS FALSE));
    -- (A queue listed twice is notified once: Postgres folds equal notifications of a transaction.)
    FOREACH v_q IN ARRAY v_ready LOOP
        IF NOT v_q = ANY (v_quiet) THEN
            PERFORM pg_notify(queue_channel(v_q), v_q);
        END IF;
    END LOOP;
    FOREACH v_q IN ARRAY v_delayed LOOP
        IF NOT v_q = ANY (v_ready) AND NOT v_q = ANY (v_quiet) THEN
            PERFORM pg_notify(queue_channel(v_q), '');
        END IF;
    END LOOP;
    IF v_deadline IS NOT NULL THEN
        PERFORM set_config('lock_timeout', v_lock_timeout, true);
    END IF;
END $$;
