-- Claim up to p_limit ready tasks of p_queue.
--   p_groups / p_weights: the groups in priority order (first = highest) and their weights (>= 1).
--   p_lease_secs: lease (visibility timeout) in seconds. p_aging_secs: aging interval in seconds,
--   0 or null = no aging. Tasks of groups not listed are not claimed by this call.
-- Steps:
--   1. Expired leases of the queue: one probe of the lease index; only when it finds one, sweep them
--      (back to pending, or dead at max attempts, see queue_expire_leases). Done before the
--      scheduler lock, so the sweep never lengthens it.
--   2. When no listed group has a ready task, return at once: no lock, no write, no commit flush.
--   3. Lock the queue's scheduler row (claims of a queue serialize on it) and read the clock.
--   4. Read up to p_limit ready tasks per group (FIFO) WITHOUT locking them: claims cannot overlap
--      (step 3), and step 6 re-checks every row it takes. A ready task whose attempts are used up
--      goes dead here ('attempts_exhausted'), never handed out.
--   5. Fill the slots by smooth weighted round robin over the positions that have work
--      (work-conserving), each slot taking the oldest head among the groups competing at that
--      position (FIFO within a group).
--   6. Lock exactly the chosen rows with FOR UPDATE SKIP LOCKED (still pending and ready: a row
--      another transaction holds or changed is not taken). If one is missing, drop it from the
--      candidates and run step 5 again from the saved counters (at most 4 rounds), so the
--      counters match what is handed out.
--   7. Mark the taken rows processing with a fresh lease token, attempts + 1, and save the counters
--      (one statement).
-- Rows come back in claim order; claim_seq numbers all claims of the queue (no gaps), served_as is
-- the group whose share the slot used.
CREATE OR REPLACE FUNCTION queue_claim(
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
AS $$
#variable_conflict use_column
DECLARE
    k integer := coalesce(array_length(p_groups, 1), 0);
    v_now timestamptz;
    v_state jsonb;
    v_seq bigint;
    cw0 bigint[];
    cw bigint[];
    c_id bigint[];
    c_run timestamptz[];
    c_grp integer[];
    g_cnt integer[];
    g_start integer[];
    g_pos integer[];
    g_end integer[];
    g_eff integer[];
    has_work boolean[];
    chosen bigint[];
    chosen_as integer[];
    got bigint[] := '{}';
    got_ctid tid[];
    missed bigint[];
    v_exhausted bigint[];
    rounds integer := 0;
    v_expired boolean;
    v_ready boolean;
    gi integer;
    c integer;
    best integer;
    pick integer;
    total bigint;
    any_work boolean;
BEGIN
    IF k = 0 OR k <> coalesce(array_length(p_weights, 1), 0) THEN
        RAISE EXCEPTION 'queue_claim: give one weight per group (% groups, % weights)', k, coalesce(array_length(p_weights, 1), 0)
            USING ERRCODE = '22023';
    END IF;
    FOR gi IN 1..k LOOP
        IF p_groups[gi] IS NULL OR p_weights[gi] IS NULL OR p_weights[gi] < 1 THEN
            RAISE EXCEPTION 'queue_claim: group names must be distinct and weights at least 1' USING ERRCODE = '22023';
        END IF;
        FOR c IN 1..gi - 1 LOOP
            IF p_groups[c] = p_groups[gi] THEN
                RAISE EXCEPTION 'queue_claim: group names must be distinct and weights at least 1' USING ERRCODE = '22023';
            END IF;
        END LOOP;
    END LOOP;
    IF p_limit IS NULL OR p_limit < 1 OR p_limit > 10000 THEN
        RAISE EXCEPTION 'queue_claim: limit must be between 1 and 10000, got %', p_limit USING ERRCODE = '22023';
    END IF;
    -- Bounds that keep every expression below inside its type (no 22003 / 22008 for any value):
    -- now() + lease fits a timestamptz, and aging positions are computed in double precision and
    -- capped at the number of groups before the integer cast. NaN is refused (NaN > 0 is true in SQL).
    IF p_lease_secs IS NULL OR p_lease_secs <= 0 OR p_lease_secs > 31536000 OR p_lease_secs <> p_lease_secs THEN
        RAISE EXCEPTION 'queue_claim: lease seconds must be above 0 and at most 31536000, got %', p_lease_secs USING ERRCODE = '22023';
    END IF;
    IF p_aging_secs < 0 OR p_aging_secs > 31536000 OR p_aging_secs <> p_aging_secs OR (p_aging_secs > 0 AND p_aging_secs < 0.001) THEN
        RAISE EXCEPTION 'queue_claim: aging seconds must be 0 (off) or from 0.001 to 31536000, got %', p_aging_secs USING ERRCODE = '22023';
    END IF;

    -- 1. and 2. in one statement: is a lease expired (one entry of queue_tasks_lease_idx), is any
    -- listed group's head ready (ready index)?
    v_now := clock_timestamp();
    SELECT EXISTS (SELECT 1 FROM queue_tasks x
                    WHERE x.queue = p_queue AND x.status = 'processing' AND x.lease_expires_at <= v_now),
           EXISTS (SELECT 1 FROM queue_tasks t
                    WHERE t.queue = p_queue AND t.priority_group = ANY (p_groups)
                      AND t.status = 'pending' AND t.run_at <= v_now)
      INTO v_expired, v_ready;
    IF v_expired THEN
        PERFORM queue_expire_leases(p_queue, 1000, v_now);
    ELSIF NOT v_ready THEN
        -- Nothing to claim (as if this claim ran a moment earlier): no lock, no write.
        RETURN;
    END IF;

    -- 3. The scheduler row, locked until commit.
    SELECT s.current_weights, s.claims INTO v_state, v_seq FROM queue_scheduler s WHERE s.queue = p_queue FOR UPDATE;
    IF NOT FOUND THEN
        INSERT INTO queue_scheduler AS s (queue) VALUES (p_queue) ON CONFLICT (queue) DO NOTHING;
        SELECT s.current_weights, s.claims INTO v_state, v_seq FROM queue_scheduler s WHERE s.queue = p_queue FOR UPDATE;
    END IF;
    -- The claim's time is read after the lock: a claim that waited for the lock must not start its
    -- leases (or judge readiness) at an earlier time.
    v_now := clock_timestamp();

    -- 4. Candidates, FIFO per group, groups in priority order, no row locks. A candidate whose
    -- attempts are already used up (attempts >= max_attempts, for example released with its attempt
    -- counted at the last attempt) is never handed out: it goes dead here, exactly once (the update
    -- re-checks it under its row lock), with dead_reason 'attempts_exhausted', and the candidates
    -- are read again (at most 3 reads; a batch can come back short by the tasks sent dead).
    LOOP
        rounds := rounds + 1;
        WITH h AS MATERIALIZED (
            SELECT g.gi::integer AS gi, t.id, t.run_at, t.exhausted
              FROM unnest(p_groups) WITH ORDINALITY AS g(name, gi)
             CROSS JOIN LATERAL (
                    SELECT x.id, x.run_at, x.attempts >= x.max_attempts AS exhausted FROM queue_tasks x
                     WHERE x.queue = p_queue AND x.priority_group = g.name
                       AND x.status = 'pending' AND x.run_at <= v_now
                     ORDER BY x.run_at, x.id
                     LIMIT p_limit) t
        )
        SELECT (SELECT coalesce(array_agg(h.id ORDER BY h.gi, h.run_at, h.id), '{}') FROM h WHERE NOT h.exhausted),
               (SELECT coalesce(array_agg(h.run_at ORDER BY h.gi, h.run_at, h.id), '{}') FROM h WHERE NOT h.exhausted),
               (SELECT coalesce(array_agg(h.gi ORDER BY h.gi, h.run_at, h.id), '{}') FROM h WHERE NOT h.exhausted),
               (SELECT array_agg((SELECT count(*) FROM h WHERE h.gi = s.i AND NOT h.exhausted)::integer ORDER BY s.i)
                  FROM generate_series(1, k) AS s(i)),
               (SELECT coalesce(array_agg(h.id ORDER BY h.id), '{}') FROM h WHERE h.exhausted)
          INTO c_id, c_run, c_grp, g_cnt, v_exhausted;
        EXIT WHEN cardinality(v_exhausted) = 0;
        UPDATE queue_tasks t
           SET status = 'dead', dead_at = v_now, dead_reason = 'attempts_exhausted', updated_at = v_now,
               last_error = 'attempts exhausted before a claim (' || t.attempts || ' of ' || t.max_attempts || ' used)'
                            || coalesce('; last error: ' || t.last_error, '')
         WHERE t.id IN (SELECT y.id FROM queue_tasks y
                         WHERE y.id = ANY (v_exhausted) AND y.status = 'pending' AND y.attempts >= y.max_attempts
                         ORDER BY y.id FOR UPDATE SKIP LOCKED)
           AND t.status = 'pending' AND t.attempts >= t.max_attempts;
        EXIT WHEN rounds >= 3;
    END LOOP;
    rounds := 0;
    FOR gi IN 1..k LOOP
        cw0[gi] := coalesce((v_state->>p_groups[gi])::bigint, 0);
    END LOOP;

    LOOP
        rounds := rounds + 1;
        -- Each group's candidates are one contiguous range of c_id (g_cnt of them).
        c := 0;
        FOR gi IN 1..k LOOP
            g_start[gi] := c + 1;
            c := c + g_cnt[gi];
            g_end[gi] := c;
        END LOOP;
        g_pos := g_start;
        cw := cw0;
        chosen := '{}';
        chosen_as := '{}';

        -- 5. Smooth weighted round robin.
        FOR slot IN 1..p_limit LOOP
            -- The position each group competes at: its own, raised one per aging interval its head waited.
            has_work := array_fill(false, ARRAY[k]);
            any_work := false;
            FOR gi IN 1..k LOOP
                IF g_pos[gi] <= g_end[gi] THEN
                    g_eff[gi] := gi;
                    IF p_aging_secs > 0 THEN
                        g_eff[gi] := greatest(1, gi - least(greatest(floor(extract(epoch FROM v_now - c_run[g_pos[gi]])::double precision / p_aging_secs), 0), k)::integer);
                    END IF;
                    has_work[g_eff[gi]] := true;
                    any_work := true;
                ELSE
                    g_eff[gi] := NULL;
                END IF;
            END LOOP;
            EXIT WHEN NOT any_work;
            -- Smooth weighted round robin over the positions with work (ties: the higher position).
            total := 0;
            best := NULL;
            FOR c IN 1..k LOOP
                IF has_work[c] THEN
                    cw[c] := cw[c] + p_weights[c];
                    total := total + p_weights[c];
                    IF best IS NULL OR cw[c] > cw[best] THEN
                        best := c;
                    END IF;
                END IF;
            END LOOP;
            cw[best] := cw[best] - total;
            -- The oldest head among the groups competing at that position.
            pick := NULL;
            FOR gi IN 1..k LOOP
                IF g_eff[gi] = best AND (pick IS NULL
                    OR (c_run[g_pos[gi]], c_id[g_pos[gi]]) < (c_run[g_pos[pick]], c_id[g_pos[pick]])) THEN
                    pick := gi;
                END IF;
            END LOOP;
            chosen := chosen || c_id[g_pos[pick]];
            chosen_as := chosen_as || best;
            g_pos[pick] := g_pos[pick] + 1;
        END LOOP;
        EXIT WHEN cardinality(chosen) = 0;

        -- 6. Lock exactly the chosen rows; a row held by another transaction is skipped, and a row
        -- changed since step 4 is re-checked against the current version.
        -- (One primary-key probe per chosen id, in id order: never a scan of the ready index.)
        SELECT coalesce(array_agg(l.id), '{}'), coalesce(array_agg(l.ctid), '{}') INTO got, got_ctid
          FROM (SELECT DISTINCT x FROM unnest(chosen) AS x ORDER BY x) AS c(tid)
         CROSS JOIN LATERAL (
                SELECT t.id, t.ctid FROM queue_tasks t
                 WHERE t.id = c.tid AND t.status = 'pending' AND t.run_at <= v_now AND t.attempts < t.max_attempts
                   FOR UPDATE SKIP LOCKED) l;
        EXIT WHEN cardinality(got) = cardinality(chosen) OR rounds >= 4;
        missed := ARRAY(SELECT unnest(chosen) EXCEPT SELECT unnest(got));
        SELECT coalesce(array_agg(u.tid ORDER BY u.o), '{}'), coalesce(array_agg(u.tr ORDER BY u.o), '{}'),
               coalesce(array_agg(u.tg ORDER BY u.o), '{}')
          INTO c_id, c_run, c_grp
          FROM unnest(c_id, c_run, c_grp) WITH ORDINALITY AS u(tid, tr, tg, o)
         WHERE NOT u.tid = ANY (missed);
        SELECT array_agg((SELECT count(*) FROM unnest(c_grp) AS x WHERE x = s.i)::integer ORDER BY s.i)
          INTO g_cnt
          FROM generate_series(1, k) AS s(i);
    END LOOP;
    IF cardinality(chosen) = 0 THEN
        RETURN;
    END IF;

    -- 7. Hand out the taken rows and save the counters, in one statement.
    -- (The rows are locked by this transaction, so their ctids are stable: no second index probe.)
    FOR gi IN 1..k LOOP
        v_state := v_state || jsonb_build_object(p_groups[gi], cw[gi]);
    END LOOP;
    RETURN QUERY
    WITH picked AS (
        SELECT u.tid, u.ord FROM unnest(chosen) WITH ORDINALITY AS u(tid, ord)
    ), claimed AS (
        UPDATE queue_tasks t
           SET status = 'processing', attempts = t.attempts + 1, lease_token = gen_random_uuid(),
               lease_expires_at = v_now + make_interval(secs => p_lease_secs), claimed_at = v_now, lease_end = NULL,
               updated_at = v_now
          FROM picked p
         WHERE t.ctid = ANY (got_ctid) AND t.id = p.tid AND t.attempts < t.max_attempts
        RETURNING p.ord, t.id, t.queue, t.priority_group, t.payload, t.dedupe_key, t.attempts, t.max_attempts,
                  t.lease_token, t.lease_expires_at, t.run_at, t.enqueued_at, t.last_error
    ), saved AS (
        UPDATE queue_scheduler s
           SET current_weights = v_state, claims = s.claims + (SELECT count(*) FROM claimed), updated_at = v_now
         WHERE s.queue = p_queue
    )
    SELECT v_seq + row_number() OVER (ORDER BY cl.ord), cl.id, cl.queue, cl.priority_group,
           p_groups[chosen_as[cl.ord]], cl.payload, cl.dedupe_key, cl.attempts, cl.max_attempts,
           cl.lease_token, cl.lease_expires_at, cl.run_at, cl.enqueued_at, cl.last_error,
           greatest(extract(epoch FROM v_now - cl.run_at)::double precision, 0)
      FROM claimed cl
     ORDER BY cl.ord;
END $$;
