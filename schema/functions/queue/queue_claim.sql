-- Claim up to p_limit ready tasks of p_queue, in fair-queuing tag order (docs/queue.md, "Scheduling").
--   p_groups / p_weights: the groups (any order) and their weights (1 to 1000). The weights are
--   recorded for the queue (queue_group_weights) when they differ from the recorded ones, and enqueue
--   tags later tasks with them; 1 to 20 groups, names as the node takes them (ol_check_texts, 'name').
--   p_limit: 1 to 10,000 tasks. p_lease_secs: lease (visibility timeout) in seconds, 1 to 86,400
--   (the node's bound, src/queue/dequeue.ts; queue_extend_lease takes the same). p_aging_secs:
--   aging interval in seconds, 0 or null = no aging, else 0.001 to 31,536,000. Tasks of groups not
--   listed are not claimed (nor tagged: a claim tags the due untagged tasks of its own groups only,
--   so another group's backlog never leaves it empty-handed). Bad arguments: SQLSTATE 22023,
--   nothing claimed.
-- Two paths, the same result:
--   Fast path, one statement with a plan cached per connection: when nothing of the queue needs the
--   full path's steps (no expired lease, no untagged task of a listed group that is due, the weights
--   as recorded, and
--   with aging on no listed group due for an aging sweep: one whose oldest task waited past the
--   interval while its tag is behind the head tag and that was not swept within the sweep gap, a
--   tenth of the interval but at most 1 s (queue_age): four index probes of the same statement, the
--   aging one reading the head tag only when some group has such a task), the first p_limit ready
--   tasks of the listed groups in (tag, id)
--   order are locked with FOR UPDATE SKIP LOCKED (queue_tasks_tag_idx) and marked processing with a
--   fresh lease token and attempts + 1. A task whose attempts are already used up goes dead instead
--   ('attempts_exhausted'), never handed out. When a probe says otherwise the statement claims
--   nothing (its scan never runs).
--   Full path (queue_claim_full): when the fast path returned fewer than p_limit tasks, for the rest
--   of the batch: sweep expired leases, record changed weights, tag due tasks, age, claim (plans
--   made per call).
-- Pauses (queue_pause, docs/queue.md "Pause and resume"): before either path, the claim holds the
--   queue's pause lock shared (queue_pause_lock) and reads the pauses in force (queue_paused_groups,
--   one primary-key probe; nothing else is added to the fast path); a paused group is left out of
--   the claim as if not listed, and with the whole queue (or every listed group) paused nothing is
--   claimed, swept or tagged.
-- Strict groups (p_strict, docs/queue.md "Strict priority"): NULL or empty = none, the claim is as
--   above (no extra statement). Otherwise the names of listed groups that always go first, in rank
--   order (distinct, each one of p_groups; else 22023). Before the weighted claim, expired leases
--   of the queue are swept (queue_expire_leases, when one probe finds any) and each strict group in
--   rank order (paused ones left out) has its ready tasks claimed oldest first by (run_at, id)
--   (queue_tasks_ready_idx, FOR UPDATE SKIP LOCKED; same lease, attempts and attempts_exhausted
--   rules, same claim_seq), up to the rest of the batch; then the weighted claim (both paths above)
--   over the other listed groups takes what is left of the batch. Strict groups are never tagged,
--   weighed or aged here, and their weights are not used. A strict group with a steady backlog
--   starves every group below it, by design.
-- Rows come back in claim order; claim_seq is drawn from queue_claim_seq as each row is locked
-- (increasing in claim order across concurrent claims, unique, gaps possible); served_as is the
-- task's own group (kept for the output's shape).
CREATE OR REPLACE FUNCTION queue_claim(
    p_queue text, p_groups text[], p_weights integer[], p_limit integer,
    p_lease_secs double precision, p_aging_secs double precision, p_strict text[] DEFAULT NULL
)
RETURNS TABLE (
    claim_seq bigint, id bigint, queue text, priority_group text, served_as text, payload jsonb,
    dedupe_key text, attempts integer, max_attempts integer, lease_token uuid,
    lease_expires_at timestamptz, run_at timestamptz, enqueued_at timestamptz, last_error text,
    waited_secs double precision
)
LANGUAGE plpgsql
SET search_path FROM CURRENT
-- The fast path's statement is planned once per connection (a custom plan per call cost more than
-- the claim itself). A generic plan knows neither LIMIT p_limit nor how many rows the queue holds,
-- and a planner that expects a tenth of the queue may sort every ready task (50 ms per claim at 3 k
-- pending, seen once), scan the table for a probe, or hash the whole table to join the few claimed
-- rows. With sorts, sequential scans, hash and merge joins priced out, every read of the statement
-- is an index scan that stops after the rows it needs, and each claimed row is joined by its primary
-- key (the plan is in docs/queue.md). JIT is off: those prices would make every call compile the
-- statement (seconds), and a claim never reads enough rows to gain from it. queue_claim_full sets
-- the planner back for its own statements.
SET plan_cache_mode = force_generic_plan
SET enable_sort = off
SET enable_seqscan = off
SET enable_hashjoin = off
SET enable_mergejoin = off
SET jit = off
AS $$
#variable_conflict use_column
DECLARE
    k integer := coalesce(array_length(p_groups, 1), 0);
    v_now timestamptz;
    v_cut timestamptz;
    v_gap interval;
    v_got integer;
    v_paused text[];
    gi integer;
    c integer;
    v_sg text;
    v_round integer;
    v_dead integer;
    v_ids bigint[];
    v_seqs bigint[];
    v_all bigint[] := '{}';
    v_all_seq bigint[] := '{}';
BEGIN
    -- Names: a plain-ASCII test here (the common case costs nothing more), and the full rule
    -- (ol_check_texts) for any name it does not pass. The length is tested apart from the pattern:
    -- PostgreSQL's regular expressions run a bounded repeat such as {1,200} about 20 times slower
    -- than '+' (5.5 against 0.25 µs per short name in PL/pgSQL, measured on PostgreSQL 15).
    IF p_queue IS NULL OR p_queue !~ '^[ -~]+$' OR length(p_queue) > 200 OR p_queue !~ '[^ ]' THEN
        PERFORM ol_check_texts('queue name', NULL, ARRAY[p_queue], 'name', 200);
    END IF;
    IF k > 20 THEN
        RAISE EXCEPTION 'queue_claim: give 1 to 20 priority groups, got %', k USING ERRCODE = '22023';
    END IF;
    IF k = 0 OR k <> coalesce(array_length(p_weights, 1), 0) THEN
        RAISE EXCEPTION 'queue_claim: give one weight per group (% groups, % weights)', k, coalesce(array_length(p_weights, 1), 0)
            USING ERRCODE = '22023';
    END IF;
    FOR gi IN 1..k LOOP
        IF p_groups[gi] IS NULL OR p_groups[gi] !~ '^[ -~]+$' OR length(p_groups[gi]) > 100 OR p_groups[gi] !~ '[^ ]' THEN
            PERFORM ol_check_texts('priority group', NULL, ARRAY[p_groups[gi]], 'name', 100);
        END IF;
        IF p_weights[gi] IS NULL OR p_weights[gi] < 1 OR p_weights[gi] > 1000 THEN
            RAISE EXCEPTION 'queue_claim: group names must be distinct and weights from 1 to 1000' USING ERRCODE = '22023';
        END IF;
        FOR c IN 1..gi - 1 LOOP
            IF p_groups[c] = p_groups[gi] THEN
                RAISE EXCEPTION 'queue_claim: group names must be distinct and weights from 1 to 1000' USING ERRCODE = '22023';
            END IF;
        END LOOP;
    END LOOP;
    IF p_limit IS NULL OR p_limit < 1 OR p_limit > 10000 THEN
        RAISE EXCEPTION 'queue_claim: limit must be between 1 and 10000, got %', p_limit USING ERRCODE = '22023';
    END IF;
    -- Bounds that keep every expression inside its type (no 22003 / 22008 for any value): queue_now() +
    -- lease fits a timestamptz. NaN is refused: PostgreSQL sorts it above every number.
    IF p_lease_secs IS NULL OR p_lease_secs < 1 OR p_lease_secs > 86400 THEN
        RAISE EXCEPTION 'queue_claim: lease seconds must be from 1 to 86400, got %', p_lease_secs USING ERRCODE = '22023';
    END IF;
    IF p_aging_secs < 0 OR p_aging_secs > 31536000 OR (p_aging_secs > 0 AND p_aging_secs < 0.001) THEN
        RAISE EXCEPTION 'queue_claim: aging seconds must be 0 (off) or from 0.001 to 31536000, got %', p_aging_secs USING ERRCODE = '22023';
    END IF;
    IF cardinality(p_strict) > 0 THEN
        FOR gi IN 1..cardinality(p_strict) LOOP
            IF p_strict[gi] IS NULL OR p_strict[gi] <> ALL (p_groups) OR p_strict[gi] = ANY (p_strict[1:gi - 1]) THEN
                RAISE EXCEPTION 'queue_claim: strict groups must be distinct listed groups, got %', p_strict
                    USING ERRCODE = '22023';
            END IF;
        END LOOP;
    END IF;

    -- Pauses (queue_pause): the queue's pause lock, shared to this transaction's end (in memory, no
    -- table read), so that a pause waits for this claim to commit; then, in the next statement (a
    -- snapshot taken after the lock: it sees every pause committed before), one probe of
    -- queue_pauses' primary key. The paused groups leave the claim (both paths, and the tagging and
    -- aging of the full path); the whole queue paused, or every listed group: nothing is claimed.
    PERFORM pg_advisory_xact_lock_shared(queue_pause_lock(p_queue));
    v_paused := queue_paused_groups(p_queue);
    IF v_paused IS NOT NULL THEN
        IF '' = ANY (v_paused) THEN
            RETURN;
        END IF;
        SELECT coalesce(array_agg(u.g ORDER BY u.o), '{}'), coalesce(array_agg(u.w ORDER BY u.o), '{}')
          INTO p_groups, p_weights
          FROM unnest(p_groups, p_weights) WITH ORDINALITY AS u(g, w, o)
         WHERE u.g <> ALL (v_paused);
        IF cardinality(p_groups) = 0 THEN
            RETURN;
        END IF;
    END IF;

    -- The queue clock moved on by this transaction's time so far (schema/functions/queue/queue_now.sql).
    v_now := queue_now() + (clock_timestamp() - now());

    -- Strict groups first (none given: skipped, no statement). Expired leases go back first, so a
    -- strict group's expired task is served again before any weighted task.
    IF cardinality(p_strict) > 0 THEN
        IF EXISTS (SELECT 1 FROM queue_tasks x
                    WHERE x.queue = p_queue AND x.status = 'processing' AND x.lease_expires_at <= v_now) THEN
            PERFORM queue_expire_leases(p_queue, 1000, v_now);
            v_now := queue_now() + (clock_timestamp() - now());
        END IF;
        v_got := 0;
        FOREACH v_sg IN ARRAY p_strict LOOP
            CONTINUE WHEN v_sg <> ALL (p_groups);  -- paused
            v_round := 0;
            LOOP
                v_round := v_round + 1;
                WITH cand AS MATERIALIZED (
                    SELECT t.id, t.attempts >= t.max_attempts AS exhausted, nextval('queue_claim_seq') AS ord
                      FROM (SELECT x.id, x.attempts, x.max_attempts FROM queue_tasks x
                             WHERE x.queue = p_queue AND x.priority_group = v_sg AND x.status = 'pending' AND NOT x.serial_wait
                               AND x.run_at <= v_now
                             ORDER BY x.run_at, x.id
                             LIMIT p_limit - v_got
                               FOR UPDATE SKIP LOCKED) t
                ), gone AS (
                    UPDATE queue_tasks t
                       SET status = 'dead', dead_at = v_now, dead_reason = 'attempts_exhausted', updated_at = v_now,
                           last_error = 'attempts exhausted before a claim (' || t.attempts || ' of ' || t.max_attempts || ' used)'
                                        || coalesce('; last error: ' || t.last_error, '')
                      FROM cand c
                     WHERE t.id = c.id AND c.exhausted
                    RETURNING t.id
                ), claimed AS (
                    UPDATE queue_tasks t
                       SET status = 'processing', attempts = t.attempts + 1, lease_token = gen_random_uuid(),
                           lease_expires_at = v_now + make_interval(secs => p_lease_secs), claimed_at = v_now,
                           lease_end = NULL, updated_at = v_now
                      FROM cand c
                     WHERE t.id = c.id AND NOT c.exhausted
                    RETURNING c.ord, t.id
                )
                SELECT coalesce(array_agg(cl.id ORDER BY cl.ord), '{}'), coalesce(array_agg(cl.ord ORDER BY cl.ord), '{}'),
                       (SELECT count(*) FROM gone)::integer
                  INTO v_ids, v_seqs, v_dead
                  FROM claimed cl;
                v_all := v_all || v_ids;
                v_all_seq := v_all_seq || v_seqs;
                v_got := v_got + cardinality(v_ids);
                -- Tasks that went dead (attempts used up) leave room: claim again, at most 3 rounds.
                EXIT WHEN v_dead = 0 OR v_got >= p_limit OR v_round >= 3;
            END LOOP;
            EXIT WHEN v_got >= p_limit;
        END LOOP;
        IF v_got > 0 THEN
            RETURN QUERY
            SELECT u.seq, t.id, t.queue, t.priority_group, t.priority_group, t.payload, t.dedupe_key,
                   t.attempts, t.max_attempts, t.lease_token, t.lease_expires_at, t.run_at, t.enqueued_at,
                   t.last_error, greatest(extract(epoch FROM v_now - t.run_at)::double precision, 0)
              FROM unnest(v_all, v_all_seq) AS u(tid, seq)
             CROSS JOIN LATERAL (SELECT x.* FROM queue_tasks x WHERE x.id = u.tid) t -- one primary-key probe each
             ORDER BY u.seq;
        END IF;
        -- The weighted claim: the other listed groups, for the rest of the batch.
        SELECT coalesce(array_agg(u.g ORDER BY u.o), '{}'), coalesce(array_agg(u.w ORDER BY u.o), '{}')
          INTO p_groups, p_weights
          FROM unnest(p_groups, p_weights) WITH ORDINALITY AS u(g, w, o)
         WHERE u.g <> ALL (p_strict);
        IF v_got >= p_limit OR cardinality(p_groups) = 0 THEN
            RETURN;
        END IF;
        p_limit := p_limit - v_got;
        v_now := queue_now() + (clock_timestamp() - now());
    END IF;
    v_cut := CASE WHEN p_aging_secs > 0 THEN v_now - make_interval(secs => p_aging_secs) END;
    v_gap := CASE WHEN p_aging_secs > 0 THEN make_interval(secs => least(p_aging_secs / 10, 1)) END;
    -- The fast path. gate: true when none of the full path's steps 1 to 4 has anything to do (the
    -- same tests as queue_claim_full's probes and its aging condition). It is a one-time filter of
    -- the candidate scan: when false, no row is read or locked. The sequence number is drawn as each
    -- row is locked (above the lock in the plan), so it follows the order in which concurrent claims
    -- take rows off the tag index.
    RETURN QUERY
    WITH gate AS MATERIALIZED (
        SELECT NOT EXISTS (SELECT 1 FROM queue_tasks x
                            WHERE x.queue = p_queue AND x.status = 'processing' AND x.lease_expires_at <= v_now)
           AND NOT EXISTS (SELECT 1 FROM unnest(p_groups) AS ug(g)
                            CROSS JOIN LATERAL (SELECT 1 FROM queue_tasks u
                                                 WHERE u.queue = p_queue AND u.priority_group = ug.g AND u.status = 'pending'
                                                   AND u.vtag IS NULL AND NOT u.serial_wait AND u.run_at <= v_now
                                                 LIMIT 1) un)
           AND NOT EXISTS (SELECT 1 FROM unnest(p_groups, p_weights) AS u(g, w)
                             LEFT JOIN queue_group_weights w ON w.queue = p_queue AND w.priority_group = u.g
                            WHERE w.weight IS DISTINCT FROM u.w)
           AND NOT (v_cut IS NOT NULL AND EXISTS (
                SELECT 1 FROM queue_group_weights sw
                 CROSS JOIN LATERAL (SELECT a.vtag FROM queue_tasks a
                                      WHERE a.queue = p_queue AND a.priority_group = sw.priority_group
                                        AND a.status = 'pending' AND NOT a.serial_wait AND a.run_at <= v_cut
                                      ORDER BY a.run_at, a.id LIMIT 1) h
                 WHERE sw.queue = p_queue AND sw.priority_group = ANY (p_groups)
                   AND (sw.aging_swept_at IS NULL OR sw.aging_swept_at <= v_now - v_gap)
                   AND h.vtag > (SELECT t.vtag FROM queue_tasks t
                                  WHERE t.queue = p_queue AND t.status = 'pending' AND t.vtag IS NOT NULL
                                    AND t.run_at <= v_now AND t.priority_group = ANY (p_groups)
                                  ORDER BY t.vtag, t.id LIMIT 1))) AS go
    ), cand AS MATERIALIZED (
        SELECT t.id, t.attempts >= t.max_attempts AS exhausted, nextval('queue_claim_seq') AS ord
          FROM (SELECT x.id, x.vtag, x.attempts, x.max_attempts FROM queue_tasks x
                 WHERE (SELECT g.go FROM gate g)
                   AND x.queue = p_queue AND x.status = 'pending' AND x.vtag IS NOT NULL
                   AND x.run_at <= v_now AND x.priority_group = ANY (p_groups)
                 ORDER BY x.vtag, x.id
                 LIMIT p_limit
                   FOR UPDATE SKIP LOCKED) t
    ), gone AS (
        UPDATE queue_tasks t
           SET status = 'dead', dead_at = v_now, dead_reason = 'attempts_exhausted', updated_at = v_now,
               last_error = 'attempts exhausted before a claim (' || t.attempts || ' of ' || t.max_attempts || ' used)'
                            || coalesce('; last error: ' || t.last_error, '')
          FROM cand c
         WHERE t.id = c.id AND c.exhausted
    ), claimed AS (
        UPDATE queue_tasks t
           SET status = 'processing', attempts = t.attempts + 1, lease_token = gen_random_uuid(),
               lease_expires_at = v_now + make_interval(secs => p_lease_secs), claimed_at = v_now, lease_end = NULL,
               updated_at = v_now
          FROM cand c
         WHERE t.id = c.id AND NOT c.exhausted
        RETURNING c.ord, t.id, t.queue, t.priority_group, t.payload, t.dedupe_key, t.attempts, t.max_attempts,
                  t.lease_token, t.lease_expires_at, t.run_at, t.enqueued_at, t.last_error
    )
    SELECT cl.ord, cl.id, cl.queue, cl.priority_group, cl.priority_group, cl.payload, cl.dedupe_key,
           cl.attempts, cl.max_attempts, cl.lease_token, cl.lease_expires_at, cl.run_at, cl.enqueued_at,
           cl.last_error, greatest(extract(epoch FROM v_now - cl.run_at)::double precision, 0)
      FROM claimed cl
     ORDER BY cl.ord;
    GET DIAGNOSTICS v_got = ROW_COUNT;
    IF v_got >= p_limit THEN
        RETURN;
    END IF;

    -- The full path for the rest of the batch (its claim_seq values are drawn later, so they are
    -- larger: the rows still come back in claim order).
    RETURN QUERY
    SELECT f.* FROM queue_claim_full(p_queue, p_groups, p_weights, p_limit - v_got, p_lease_secs, p_aging_secs) f;
END $$;
