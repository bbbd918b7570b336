-- The full claim path of queue_claim (schema/functions/queue/queue_claim.sql), which calls it when its
-- one-statement fast path did not fill the batch: something is expired, untagged, reweighted or
-- aged, or the fast path came back short (too few ready tasks, or tasks of the batch went dead). Not
-- an entry point: queue_claim validates the arguments (same meaning as there) before calling it,
-- and leaves the paused groups out of p_groups (queue_pause), so nothing here sees them.
-- Claims up to p_limit ready tasks of p_queue, in fair-queuing tag order (docs/queue.md, "Scheduling").
-- Steps (no shared row is locked or written on the common path, so claims of a queue overlap):
--   1. One statement of probes: an expired lease of the queue? a ready task of a listed group? an
--      untagged pending task of a listed group that is due? Expired leases are swept
--      (queue_expire_leases); with no ready task and nothing expired, return at once (no lock, no
--      write).
--   2. Weights differing from the recorded ones: recorded, and the backlog of those groups re-tagged
--      to them (queue_set_weights; rare, never waits).
--   3. Untagged due tasks of the listed groups: tagged now (queue_tag_due; never waits). Other groups'
--      are left to their own consumers' claims: tagging them here (FIFO across every group, 10,000 at
--      a time) would leave this claim empty while its own tasks waited behind another group's backlog.
--   4. Aging (p_aging_secs > 0): the sweep, queue_age: a listed group whose oldest task waited longer
--      than the interval and is behind the head tag, and that was not swept within the sweep gap (a
--      tenth of the interval, at most 1 s), has its oldest aged tasks (up to max(p_limit, 1000)
--      across such groups) moved to the head tag: they go to the front, FIFO among themselves (id
--      order), rows held elsewhere skipped.
--   5. The claim: the first p_limit ready tasks of the listed groups in (tag, id) order, locked with
--      FOR UPDATE SKIP LOCKED (queue_tasks_tag_idx), marked processing with a fresh lease token and
--      attempts + 1 in the same statement. A task whose attempts are already used up (released with
--      its attempt counted at the last attempt) goes dead instead ('attempts_exhausted'), never
--      handed out; the rest of the batch is then claimed again (at most 3 rounds).
-- Rows come back in claim order; claim_seq is drawn from queue_claim_seq as each row is locked
-- (increasing in claim order across concurrent claims, unique, gaps possible); served_as is the
-- task's own group (kept for the output's shape).
CREATE OR REPLACE FUNCTION queue_claim_full(
    p_queue text, p_groups text[], p_weights integer[], p_limit integer,
    p_lease_secs double precision, p_aging_secs double precision
)
RETURNS TABLE (
    claim_seq bigint, id bigint, queue text, priority_group text, served_as text, payload jsonb,
    dedupe_key text, attempts integer, max_attempts integer, lease_token uuid,
    lease_expires_at timestamptz, run_at timestamptz, enqueued_at timestamptz, last_error text,
    waited_secs double precision
)
LANGUAGE plpgsql
SET search_path FROM CURRENT
-- Plans made for this call's values: a generic plan of step 5 (its LIMIT unknown) sorts every ready
-- task of the queue instead of reading the first few entries of the tag index.
SET plan_cache_mode = force_custom_plan
-- queue_claim, the caller, turns these off for its fast path's cached plan; here they are on again
-- (a function's SET applies to the functions it calls), so these statements are planned as usual.
SET enable_sort = on
SET enable_seqscan = on
SET enable_hashjoin = on
SET enable_mergejoin = on
AS $$
#variable_conflict use_column
DECLARE
    v_now timestamptz;
    v_expired boolean;
    v_ready boolean;
    v_untagged boolean;
    v_reweigh boolean;
    v_aged boolean;
    v_cut timestamptz;
    v_round integer := 0;
    v_got integer := 0;
    v_dead integer;
    v_ids bigint[];
    v_all bigint[] := '{}';
    v_seqs bigint[];
    v_all_seq bigint[] := '{}';
BEGIN
    -- 1. Probes, in one statement: an expired lease (queue_tasks_lease_idx), a listed group's ready
    -- head (queue_tasks_ready_idx), an untagged due task of a listed group (queue_tasks_untagged_group_idx), weights that
    -- differ from the recorded ones, a listed group's head older than the aging interval.
    v_now := queue_now() + (clock_timestamp() - now());  -- see queue_now.sql
    v_cut := CASE WHEN p_aging_secs > 0 THEN v_now - make_interval(secs => p_aging_secs) END;
    SELECT EXISTS (SELECT 1 FROM queue_tasks x
                    WHERE x.queue = p_queue AND x.status = 'processing' AND x.lease_expires_at <= v_now),
           EXISTS (SELECT 1 FROM queue_tasks t
                    WHERE t.queue = p_queue AND t.priority_group = ANY (p_groups)
                      AND t.status = 'pending' AND NOT t.serial_wait AND t.run_at <= v_now),
           EXISTS (SELECT 1 FROM unnest(p_groups) AS ug(g)
                    CROSS JOIN LATERAL (SELECT 1 FROM queue_tasks u
                                         WHERE u.queue = p_queue AND u.priority_group = ug.g AND u.status = 'pending'
                                           AND u.vtag IS NULL AND NOT u.serial_wait AND u.run_at <= v_now
                                         LIMIT 1) un),
           EXISTS (SELECT 1 FROM unnest(p_groups, p_weights) AS u(g, w)
                     LEFT JOIN queue_group_weights w ON w.queue = p_queue AND w.priority_group = u.g
                    WHERE w.weight IS DISTINCT FROM u.w),
           v_cut IS NOT NULL AND EXISTS (
                SELECT 1 FROM queue_tasks a
                 WHERE a.queue = p_queue AND a.priority_group = ANY (p_groups)
                   AND a.status = 'pending' AND NOT a.serial_wait AND a.run_at <= v_cut)
      INTO v_expired, v_ready, v_untagged, v_reweigh, v_aged;
    IF v_expired THEN
        PERFORM queue_expire_leases(p_queue, 1000, v_now);
        -- A cancelled serial head the sweep ended handed its key on: the new head is untagged.
        v_untagged := v_untagged OR EXISTS (
            SELECT 1 FROM unnest(p_groups) AS ug(g)
             CROSS JOIN LATERAL (SELECT 1 FROM queue_tasks u
                                  WHERE u.queue = p_queue AND u.priority_group = ug.g AND u.status = 'pending'
                                    AND u.vtag IS NULL AND NOT u.serial_wait AND u.run_at <= v_now
                                  LIMIT 1) un);
    ELSIF NOT v_ready THEN
        -- Nothing to claim (as if this claim ran a moment earlier): no lock, no write.
        RETURN;
    END IF;

    -- 2. The weights enqueue tags with: written only when they differ.
    IF v_reweigh THEN
        PERFORM queue_set_weights(p_queue, p_groups, p_weights);
    END IF;

    -- 3. Due tasks of the listed groups without a tag get theirs (never waits).
    IF v_untagged THEN
        PERFORM queue_tag_due(p_queue, p_groups, v_now);
    END IF;

    -- 4. Aging: the sweep (queue_age) moves the oldest aged tasks of groups not swept within the
    -- sweep gap to the front (the head tag).
    IF v_aged THEN
        PERFORM queue_age(p_queue, p_groups, p_limit, p_aging_secs, v_now);
    END IF;
    -- 5. The claim. The lease starts at the time read here (after steps 1 to 4). When tasks of the
    -- batch went dead (attempts used up), the rest of the batch is claimed again (at most 3 rounds).
    v_now := queue_now() + (clock_timestamp() - now());  -- see queue_now.sql
    LOOP
        v_round := v_round + 1;
        -- The sequence number is drawn as each row is locked (above the lock in the plan), so it
        -- follows the order in which concurrent claims take rows off the tag index.
        WITH cand AS MATERIALIZED (
            SELECT t.id, t.attempts >= t.max_attempts AS exhausted, nextval('queue_claim_seq') AS ord
              FROM (SELECT x.id, x.vtag, x.attempts, x.max_attempts FROM queue_tasks x
                     WHERE x.queue = p_queue AND x.status = 'pending' AND x.vtag IS NOT NULL
                       AND x.run_at <= v_now AND x.priority_group = ANY (p_groups)
                     ORDER BY x.vtag, x.id
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
                   lease_expires_at = v_now + make_interval(secs => p_lease_secs), claimed_at = v_now, lease_end = NULL,
                   updated_at = v_now
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
        EXIT WHEN v_dead = 0 OR v_got >= p_limit OR v_round >= 3;
    END LOOP;
    IF v_got = 0 THEN
        RETURN;
    END IF;

    -- The claimed rows (locked by this transaction), in claim order, with claim sequence numbers.
    RETURN QUERY
    SELECT u.seq, t.id, t.queue, t.priority_group, t.priority_group, t.payload, t.dedupe_key,
           t.attempts, t.max_attempts, t.lease_token, t.lease_expires_at, t.run_at, t.enqueued_at,
           t.last_error, greatest(extract(epoch FROM v_now - t.run_at)::double precision, 0)
      FROM unnest(v_all, v_all_seq) AS u(tid, seq)
     CROSS JOIN LATERAL (SELECT x.* FROM queue_tasks x WHERE x.id = u.tid) t -- one primary-key probe each
     ORDER BY u.seq;
END $$;
