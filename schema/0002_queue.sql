-- n8n-nodes-operation-ledger, migration 0002: the priority task queue (Priority Dequeue).
--
-- Apply by hand after 0001 (one transaction; the only variable is the schema name):
--   psql -1 -v ON_ERROR_STOP=1 -v schema=operation_ledger -f schema/0002_queue.sql
-- The nodes apply the same file on first use when the credential allows it.
--
-- A task is one row of queue_tasks while it is live or dead; a succeeded task moves to
-- queue_tasks_archive in the same statement that completes it, so the hot table only holds work.
--
-- State machine. Each arrow is one guarded statement in the functions below; the WHERE clause of
-- that statement is the arrow's precondition. Time always comes from the database clock (now()).
--
--   (no row) --enqueue-------------------------------------> pending     (run_at = not-before time)
--   pending --claim (run_at <= now, weighted fair)----------> processing  (attempts + 1, lease, lease token)
--   processing --complete (live lease token)----------------> succeeded   (row moves to the archive)
--   processing --fail, attempts < max (live lease token)----> pending     (run_at = now + backoff, last_error)
--   processing --fail, attempts = max or give up------------> dead        (last_error, dead_at)
--   processing --release (live lease token)-----------------> pending     (attempt not counted by default)
--   processing --lease expired, attempts < max--------------> pending     (last_error 'lease expired ...')
--   processing --lease expired, attempts = max--------------> dead        (last_error 'lease expired at max attempts ...')
--   dead --requeue dead (by hand)---------------------------> pending     (attempts 0, requeues + 1)
--   dead --purge after the dead retention-------------------> archive     (status dead)
--
-- A lease is live while status = 'processing' and lease_expires_at > now(). Every settling
-- statement (complete, fail, extend lease, release) requires a live lease with the caller's lease
-- token; a holder whose lease was lost changes nothing and is told why.
--
-- Weighted fair queuing (queue_claim): the groups are given in priority order with weights (default
-- high 5, normal 2, low 1). Each claimed slot is chosen by smooth weighted round robin over the
-- groups that have ready work, with the round-robin counters kept in queue_scheduler and locked for
-- the claim, so the order is one global sequence across executions and concurrent workers. Aging: a
-- group whose oldest ready task has waited n aging intervals competes as n positions higher (never
-- above the first); in a slot, among the groups competing at that position, the oldest head wins.

SET search_path TO :"schema";

CREATE TABLE queue_tasks (
    id                bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    queue             text NOT NULL CHECK (octet_length(queue) BETWEEN 1 AND 200),
    priority_group    text NOT NULL CHECK (octet_length(priority_group) BETWEEN 1 AND 100),
    status            text NOT NULL CHECK (status IN ('pending', 'processing', 'dead')),
    payload           jsonb NOT NULL DEFAULT '{}'::jsonb,
    -- Enqueue is idempotent per (queue, dedupe_key) while the task is live (pending or processing).
    dedupe_key        text CHECK (octet_length(dedupe_key) BETWEEN 1 AND 512),
    -- When the task may be claimed: the not-before time, the retry time after a backoff, or the
    -- original availability time (kept through a claim, so an expired lease puts the task back at
    -- the head of its group).
    run_at            timestamptz NOT NULL DEFAULT now(),
    -- Number of claims in this life of the task (a claim whose lease expires counts too).
    attempts          integer NOT NULL DEFAULT 0 CHECK (attempts >= 0),
    max_attempts      integer NOT NULL DEFAULT 5 CHECK (max_attempts BETWEEN 1 AND 1000),
    -- The last holder's token; live only while status = 'processing' and lease_expires_at > now().
    lease_token       uuid,
    lease_expires_at  timestamptz,
    claimed_at        timestamptz,
    last_error        text,
    requeues          integer NOT NULL DEFAULT 0,
    enqueued_at       timestamptz NOT NULL DEFAULT now(),
    updated_at        timestamptz NOT NULL DEFAULT now(),
    dead_at           timestamptz,
    CHECK (status <> 'processing' OR (lease_token IS NOT NULL AND lease_expires_at IS NOT NULL)),
    CHECK ((status = 'dead') = (dead_at IS NOT NULL))
);
-- A queue table churns: vacuum it early so claimed rows do not linger in the ready index.
ALTER TABLE queue_tasks SET (autovacuum_vacuum_scale_factor = 0.01, autovacuum_analyze_scale_factor = 0.02);

-- The claim reads each group's ready head from this index: (queue, group) is an equality prefix and
-- (run_at, id) the FIFO order, so a claim costs a few index probes whether 10 thousand or 1 million
-- tasks are pending.
CREATE INDEX queue_tasks_ready_idx ON queue_tasks (queue, priority_group, run_at, id) WHERE status = 'pending';
-- Expired leases, found by the claim's sweep and by the trigger's due check.
CREATE INDEX queue_tasks_lease_idx ON queue_tasks (queue, lease_expires_at) WHERE status = 'processing';
CREATE INDEX queue_tasks_dead_idx ON queue_tasks (queue, dead_at, id) WHERE status = 'dead';
CREATE UNIQUE INDEX queue_tasks_dedupe_idx ON queue_tasks (queue, dedupe_key)
    WHERE dedupe_key IS NOT NULL AND status IN ('pending', 'processing');

-- Finished tasks: succeeded (moved by queue_complete) and dead (moved by queue_purge after the dead
-- retention). queue_purge deletes archive rows after the archive retention.
CREATE TABLE queue_tasks_archive (
    id                bigint PRIMARY KEY,
    queue             text NOT NULL,
    priority_group    text NOT NULL,
    status            text NOT NULL CHECK (status IN ('succeeded', 'dead')),
    payload           jsonb NOT NULL,
    dedupe_key        text,
    attempts          integer NOT NULL,
    max_attempts      integer NOT NULL,
    lease_token       uuid,
    last_error        text,
    result            jsonb,
    requeues          integer NOT NULL DEFAULT 0,
    enqueued_at       timestamptz NOT NULL,
    finished_at       timestamptz NOT NULL,
    archived_at       timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX queue_tasks_archive_finished_idx ON queue_tasks_archive (queue, status, finished_at);
CREATE INDEX queue_tasks_archive_archived_idx ON queue_tasks_archive (archived_at);

-- Scheduler state per queue: the smooth weighted round robin's current weight per group
-- ({"high": 3, "normal": -2, ...}) and the number of tasks claimed so far (claim sequence).
CREATE TABLE queue_scheduler (
    queue             text PRIMARY KEY,
    current_weights   jsonb NOT NULL DEFAULT '{}'::jsonb,
    claims            bigint NOT NULL DEFAULT 0,
    updated_at        timestamptz NOT NULL DEFAULT now()
);

-- The LISTEN/NOTIFY channel of a queue: 'oplq_' and the first 24 hex digits of
-- md5(schema || '/' || queue). The nodes compute the same name (src/queue/channel.ts).
CREATE FUNCTION queue_channel(p_queue text) RETURNS text
LANGUAGE sql STABLE
SET search_path FROM CURRENT
AS $$
    SELECT 'oplq_' || left(md5(current_schema() || '/' || p_queue), 24)
$$;

-- Why a settle call with lease token p_token did not apply to task t (t as it is now).
CREATE FUNCTION queue_lease_lost_reason(t queue_tasks, p_token uuid) RETURNS text
LANGUAGE sql STABLE
SET search_path FROM CURRENT
AS $$
    SELECT CASE
        WHEN t.status = 'processing' AND t.lease_token = p_token
            THEN 'the lease expired at ' || t.lease_expires_at::text || '; the task will be handed out again'
        WHEN t.status = 'processing'
            THEN 'the lease was lost: the task is held by another holder now'
        WHEN t.lease_token = p_token
            THEN 'this lease already settled the task (now ' || t.status || ')'
        WHEN t.status = 'dead'
            THEN 'the lease was lost and the task is dead: ' || coalesce(t.last_error, '')
        ELSE 'the lease was lost: the task is ' || t.status || ' again'
    END
$$;

-- Expired leases of one queue (at most p_limit, oldest first): back to pending, or dead when the
-- attempts are used up. p_now: the time to judge expiry by (default: the current clock, not the
-- transaction start). Returns how many rows changed.
CREATE FUNCTION queue_expire_leases(p_queue text, p_limit integer DEFAULT 1000, p_now timestamptz DEFAULT clock_timestamp())
RETURNS integer
LANGUAGE plpgsql
SET search_path FROM CURRENT
AS $$
DECLARE
    n integer;
BEGIN
    UPDATE queue_tasks t
       SET status = CASE WHEN t.attempts >= t.max_attempts THEN 'dead' ELSE 'pending' END,
           last_error = CASE WHEN t.attempts >= t.max_attempts
                             THEN 'lease expired at max attempts (' || t.attempts || ' of ' || t.max_attempts || ')'
                             ELSE 'lease expired (attempt ' || t.attempts || ' of ' || t.max_attempts || ')' END,
           dead_at = CASE WHEN t.attempts >= t.max_attempts THEN p_now END,
           lease_expires_at = NULL,
           updated_at = p_now
     WHERE t.id IN (SELECT x.id FROM queue_tasks x
                     WHERE x.queue = p_queue AND x.status = 'processing' AND x.lease_expires_at <= p_now
                     ORDER BY x.lease_expires_at
                     LIMIT p_limit
                     FOR UPDATE SKIP LOCKED)
       AND t.status = 'processing' AND t.lease_expires_at <= p_now;
    GET DIAGNOSTICS n = ROW_COUNT;
    RETURN n;
END $$;

-- Enqueue a batch. p_items: [{"i": item index, "q": queue, "g": priority group, "p": payload (json),
-- "k": dedupe key or null, "at": not-before time (ISO-8601) or null, "d": delay in seconds or null,
-- "m": max attempts or null (5)}]. run_at = the latest of now, "at" and now + "d".
-- Items without a dedupe key are written by one INSERT: their ids are drawn from the identity
-- sequence first, so each row maps back to its item. Items with a dedupe key go one by one in
-- (queue, dedupe key) order (one lock order for concurrent batches with overlapping keys): a key
-- that matches a live task (pending or processing) returns that task with deduplicated = true and
-- writes nothing. One statement, so the batch is all or nothing.
-- Sends pg_notify(queue_channel(queue), payload) once per queue that gained a task: payload = the
-- queue name when a task that is claimable now was added, '' when only delayed tasks were (a
-- listener then only needs to re-read the due time). Like the rows, it is delivered only on commit.
CREATE FUNCTION queue_enqueue(p_items jsonb)
RETURNS TABLE (
    idx integer, id bigint, deduplicated boolean, queue text, priority_group text, status text,
    payload jsonb, dedupe_key text, run_at timestamptz, attempts integer, max_attempts integer,
    enqueued_at timestamptz
)
LANGUAGE plpgsql
SET search_path FROM CURRENT
AS $$
#variable_conflict use_column
DECLARE
    it record;
    r queue_tasks%ROWTYPE;
    v_seq regclass := pg_get_serial_sequence('queue_tasks', 'id')::regclass;
    v_ready text[];
    v_delayed text[];
    v_q text;
BEGIN
    -- Items without a dedupe key: one INSERT. They conflict with nothing, so they need no lock order.
    RETURN QUERY
    WITH items AS (
        SELECT nextval(v_seq) AS tid, (e->>'i')::integer AS i, e->>'q' AS q, e->>'g' AS g,
               coalesce(e->'p', '{}'::jsonb) AS p, coalesce((e->>'m')::integer, 5) AS m,
               greatest(now(), coalesce((e->>'at')::timestamptz, now()),
                        now() + make_interval(secs => greatest(coalesce((e->>'d')::double precision, 0), 0))) AS at
          FROM jsonb_array_elements(p_items) AS e
         WHERE nullif(e->>'k', '') IS NULL
    ), ins AS (
        INSERT INTO queue_tasks AS t (id, queue, priority_group, status, payload, run_at, max_attempts)
        OVERRIDING SYSTEM VALUE
        SELECT x.tid, x.q, x.g, 'pending', x.p, x.at, x.m FROM items x
        RETURNING t.*
    )
    SELECT x.i, s.id, false, s.queue, s.priority_group, s.status, s.payload, s.dedupe_key, s.run_at,
           s.attempts, s.max_attempts, s.enqueued_at
      FROM ins s JOIN items x ON x.tid = s.id;
    -- Which queues gained a task that is claimable now, or only delayed ones (for the notification).
    SELECT coalesce(array_agg(DISTINCT x.q) FILTER (WHERE x.at <= now()), '{}'),
           coalesce(array_agg(DISTINCT x.q) FILTER (WHERE x.at > now()), '{}')
      INTO v_ready, v_delayed
      FROM (SELECT e->>'q' AS q,
                   greatest(now(), coalesce((e->>'at')::timestamptz, now()),
                            now() + make_interval(secs => greatest(coalesce((e->>'d')::double precision, 0), 0))) AS at
              FROM jsonb_array_elements(p_items) AS e
             WHERE nullif(e->>'k', '') IS NULL) x;

    -- Items with a dedupe key: one by one, in one lock order.
    FOR it IN
        SELECT (e->>'i')::integer AS i, e->>'q' AS q, e->>'g' AS g, coalesce(e->'p', '{}'::jsonb) AS p,
               e->>'k' AS k, (e->>'at')::timestamptz AS at,
               coalesce((e->>'d')::double precision, 0) AS d, coalesce((e->>'m')::integer, 5) AS m
        FROM jsonb_array_elements(p_items) AS e
        WHERE nullif(e->>'k', '') IS NOT NULL
        ORDER BY e->>'q', e->>'k', (e->>'i')::integer
    LOOP
        LOOP
            INSERT INTO queue_tasks AS t (queue, priority_group, status, payload, dedupe_key, run_at, max_attempts)
            VALUES (it.q, it.g, 'pending', it.p, it.k,
                    greatest(now(), coalesce(it.at, now()), now() + make_interval(secs => greatest(it.d, 0))),
                    it.m)
            ON CONFLICT (queue, dedupe_key) WHERE dedupe_key IS NOT NULL AND status IN ('pending', 'processing')
            DO NOTHING
            RETURNING t.* INTO r;
            IF FOUND THEN
                deduplicated := false;
                IF r.run_at <= now() THEN
                    IF NOT it.q = ANY (v_ready) THEN v_ready := v_ready || it.q; END IF;
                ELSIF NOT it.q = ANY (v_delayed) THEN
                    v_delayed := v_delayed || it.q;
                END IF;
                EXIT;
            END IF;
            -- The live task with this key (committed: this statement takes a fresh snapshot).
            SELECT * INTO r FROM queue_tasks t
             WHERE t.queue = it.q AND t.dedupe_key = it.k AND t.status IN ('pending', 'processing');
            IF FOUND THEN
                deduplicated := true;
                EXIT;
            END IF;
            -- It settled between the two statements: insert again.
        END LOOP;
        idx := it.i;
        id := r.id;
        queue := r.queue;
        priority_group := r.priority_group;
        status := r.status;
        payload := r.payload;
        dedupe_key := r.dedupe_key;
        run_at := r.run_at;
        attempts := r.attempts;
        max_attempts := r.max_attempts;
        enqueued_at := r.enqueued_at;
        RETURN NEXT;
    END LOOP;
    FOREACH v_q IN ARRAY v_ready LOOP
        PERFORM pg_notify(queue_channel(v_q), v_q);
    END LOOP;
    FOREACH v_q IN ARRAY v_delayed LOOP
        IF NOT v_q = ANY (v_ready) THEN
            PERFORM pg_notify(queue_channel(v_q), '');
        END IF;
    END LOOP;
END $$;

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
--      (step 3), and step 6 re-checks every row it takes.
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
CREATE FUNCTION queue_claim(
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
    IF p_lease_secs IS NULL OR p_lease_secs <= 0 THEN
        RAISE EXCEPTION 'queue_claim: lease seconds must be positive, got %', p_lease_secs USING ERRCODE = '22023';
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

    -- 4. Candidates, FIFO per group, groups in priority order, no row locks.
    WITH h AS MATERIALIZED (
        SELECT g.gi::integer AS gi, t.id, t.run_at
          FROM unnest(p_groups) WITH ORDINALITY AS g(name, gi)
         CROSS JOIN LATERAL (
                SELECT x.id, x.run_at FROM queue_tasks x
                 WHERE x.queue = p_queue AND x.priority_group = g.name
                   AND x.status = 'pending' AND x.run_at <= v_now
                 ORDER BY x.run_at, x.id
                 LIMIT p_limit) t
    )
    SELECT (SELECT coalesce(array_agg(h.id ORDER BY h.gi, h.run_at, h.id), '{}') FROM h),
           (SELECT coalesce(array_agg(h.run_at ORDER BY h.gi, h.run_at, h.id), '{}') FROM h),
           (SELECT coalesce(array_agg(h.gi ORDER BY h.gi, h.run_at, h.id), '{}') FROM h),
           (SELECT array_agg((SELECT count(*) FROM h WHERE h.gi = s.i)::integer ORDER BY s.i) FROM generate_series(1, k) AS s(i))
      INTO c_id, c_run, c_grp, g_cnt;
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
                        g_eff[gi] := greatest(1, gi - floor(extract(epoch FROM v_now - c_run[g_pos[gi]]) / p_aging_secs)::integer);
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
                 WHERE t.id = c.tid AND t.status = 'pending' AND t.run_at <= v_now
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
               lease_expires_at = v_now + make_interval(secs => p_lease_secs), claimed_at = v_now,
               updated_at = v_now
          FROM picked p
         WHERE t.ctid = ANY (got_ctid) AND t.id = p.tid
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

-- Complete a batch. p_items: [{"i": item index, "id": task id, "tok": lease token, "res": result json or null}].
-- Outcomes: completed (moved to the archive as succeeded) | already_settled (this lease token already
-- completed it) | lease_lost (row untouched; detail says why) | not_found.
-- The first item of every task id is completed by one DELETE … RETURNING piped into the archive
-- INSERT (rows taken in id order); only the items it did not complete (lost leases, repeated ids)
-- go through the item-by-item path, which says why.
CREATE FUNCTION queue_complete(p_items jsonb)
RETURNS TABLE (idx integer, id bigint, outcome text, status text, attempts integer, finished_at timestamptz, detail text)
LANGUAGE plpgsql
SET search_path FROM CURRENT
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
BEGIN
    -- The first item of every task id, keyed by id.
    SELECT coalesce(jsonb_object_agg(f.tid::text, jsonb_build_object('i', f.i, 'tok', f.tok, 'res', f.res)), '{}'),
           coalesce(array_agg(f.tid ORDER BY f.tid), '{}')
      INTO v_map, v_ids
      FROM (SELECT DISTINCT ON ((e->>'id')::bigint) (e->>'i')::integer AS i, (e->>'id')::bigint AS tid,
                   e->>'tok' AS tok, e->'res' AS res
              FROM jsonb_array_elements(p_items) AS e
             ORDER BY (e->>'id')::bigint, (e->>'i')::integer) f;
    -- Rows are found by id (primary key: one lock order); the lease test is written so that the
    -- planner never scans the lease index instead.
    WITH gone AS (
        DELETE FROM queue_tasks x
         WHERE x.id = ANY (v_ids) AND x.status = 'processing'
           AND x.lease_token = (v_map->(x.id::text)->>'tok')::uuid
           AND x.lease_expires_at - now() > interval '0'
        RETURNING x.*
    ), moved AS (
        INSERT INTO queue_tasks_archive AS ar (id, queue, priority_group, status, payload, dedupe_key, attempts,
                                               max_attempts, lease_token, last_error, result, requeues, enqueued_at, finished_at)
        SELECT g.id, g.queue, g.priority_group, 'succeeded', g.payload, g.dedupe_key, g.attempts, g.max_attempts,
               g.lease_token, g.last_error, v_map->(g.id::text)->'res', g.requeues, g.enqueued_at, now()
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

    IF cardinality(v_i) = jsonb_array_length(p_items) THEN
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
        WITH gone AS (
            DELETE FROM queue_tasks x
             WHERE x.id = it.tid AND x.status = 'processing' AND x.lease_token = it.tok AND x.lease_expires_at > now()
            RETURNING x.*
        )
        INSERT INTO queue_tasks_archive AS ar (id, queue, priority_group, status, payload, dedupe_key, attempts,
                                               max_attempts, lease_token, last_error, result, requeues, enqueued_at, finished_at)
        SELECT g.id, g.queue, g.priority_group, 'succeeded', g.payload, g.dedupe_key, g.attempts, g.max_attempts,
               g.lease_token, g.last_error, it.res, g.requeues, g.enqueued_at, now()
          FROM gone g
        RETURNING ar.* INTO a;
        IF FOUND THEN
            outcome := 'completed';
            status := 'succeeded';
            attempts := a.attempts;
            finished_at := a.finished_at;
        ELSE
            SELECT * INTO t FROM queue_tasks x WHERE x.id = it.tid;
            IF FOUND THEN
                outcome := 'lease_lost';
                status := t.status;
                attempts := t.attempts;
                detail := queue_lease_lost_reason(t, it.tok);
            ELSE
                SELECT * INTO a FROM queue_tasks_archive x WHERE x.id = it.tid;
                IF FOUND THEN
                    outcome := CASE WHEN a.lease_token = it.tok AND a.status = 'succeeded' THEN 'already_settled' ELSE 'lease_lost' END;
                    status := a.status;
                    attempts := a.attempts;
                    finished_at := a.finished_at;
                    detail := CASE WHEN outcome = 'already_settled' THEN 'this lease already completed the task'
                                   ELSE 'the task is finished (' || a.status || ') under another lease' END;
                ELSE
                    outcome := 'not_found';
                    status := NULL;
                    attempts := NULL;
                    detail := 'no task with this id';
                END IF;
            END IF;
        END IF;
        RETURN NEXT;
    END LOOP;
END $$;

-- Fail a batch. p_items: [{"i": item index, "id": task id, "tok": lease token, "err": error text,
-- "giveUp": true to go dead now}]. Backoff in seconds: b = least(p_cap_secs, p_base_secs * 2^(attempts-1)),
-- retry after b/2 + random() * b/2 ("equal jitter": at least half the backoff). At max attempts (or
-- giveUp) the task goes dead with the error as last_error; that transition happens once, because it
-- needs the live lease that it ends.
-- Outcomes: retry_scheduled | dead | already_settled | lease_lost | not_found.
CREATE FUNCTION queue_fail(p_items jsonb, p_base_secs double precision, p_cap_secs double precision)
RETURNS TABLE (
    idx integer, id bigint, outcome text, status text, attempts integer, max_attempts integer,
    retry_at timestamptz, last_error text, detail text
)
LANGUAGE plpgsql
SET search_path FROM CURRENT
AS $$
#variable_conflict use_column
DECLARE
    it record;
    t queue_tasks%ROWTYPE;
    a queue_tasks_archive%ROWTYPE;
    b double precision;
BEGIN
    IF p_base_secs IS NULL OR p_base_secs < 0 OR p_cap_secs IS NULL OR p_cap_secs < 0 THEN
        RAISE EXCEPTION 'queue_fail: backoff seconds must not be negative' USING ERRCODE = '22023';
    END IF;
    FOR it IN
        SELECT (e->>'i')::integer AS i, (e->>'id')::bigint AS tid, (e->>'tok')::uuid AS tok,
               coalesce(e->>'err', 'failed') AS err, coalesce((e->>'giveUp')::boolean, false) AS give_up
        FROM jsonb_array_elements(p_items) AS e
        ORDER BY (e->>'id')::bigint, (e->>'i')::integer
    LOOP
        idx := it.i;
        id := it.tid;
        retry_at := NULL;
        detail := NULL;
        SELECT * INTO t FROM queue_tasks x
         WHERE x.id = it.tid AND x.status = 'processing' AND x.lease_token = it.tok AND x.lease_expires_at > now()
           FOR UPDATE;
        IF FOUND THEN
            IF it.give_up OR t.attempts >= t.max_attempts THEN
                UPDATE queue_tasks x
                   SET status = 'dead', last_error = it.err, dead_at = now(), lease_expires_at = NULL, updated_at = now()
                 WHERE x.id = t.id AND x.status = 'processing' AND x.lease_token = it.tok
                RETURNING x.* INTO t;
                outcome := 'dead';
                detail := CASE WHEN it.give_up THEN 'gave up: no retry' ELSE 'max attempts reached' END;
            ELSE
                b := least(p_cap_secs, p_base_secs * power(2::double precision, t.attempts - 1));
                UPDATE queue_tasks x
                   SET status = 'pending', last_error = it.err, lease_expires_at = NULL, updated_at = now(),
                       run_at = now() + make_interval(secs => b / 2 + random() * b / 2)
                 WHERE x.id = t.id AND x.status = 'processing' AND x.lease_token = it.tok
                RETURNING x.* INTO t;
                outcome := 'retry_scheduled';
                retry_at := t.run_at;
            END IF;
            status := t.status;
            attempts := t.attempts;
            max_attempts := t.max_attempts;
            last_error := t.last_error;
        ELSE
            SELECT * INTO t FROM queue_tasks x WHERE x.id = it.tid;
            IF FOUND THEN
                outcome := CASE WHEN t.lease_token = it.tok AND t.status <> 'processing' THEN 'already_settled' ELSE 'lease_lost' END;
                status := t.status;
                attempts := t.attempts;
                max_attempts := t.max_attempts;
                last_error := t.last_error;
                detail := queue_lease_lost_reason(t, it.tok);
            ELSE
                SELECT * INTO a FROM queue_tasks_archive x WHERE x.id = it.tid;
                IF FOUND THEN
                    outcome := 'lease_lost';
                    status := a.status;
                    attempts := a.attempts;
                    max_attempts := a.max_attempts;
                    last_error := a.last_error;
                    detail := 'the task is finished (' || a.status || ')';
                ELSE
                    outcome := 'not_found';
                    status := NULL; attempts := NULL; max_attempts := NULL; last_error := NULL;
                    detail := 'no task with this id';
                END IF;
            END IF;
        END IF;
        RETURN NEXT;
    END LOOP;
END $$;

-- Extend leases (heartbeat). p_items: [{"i", "id", "tok", "secs": new lease length from now, seconds}].
-- Outcomes: extended | lease_lost | not_found.
CREATE FUNCTION queue_extend_lease(p_items jsonb)
RETURNS TABLE (idx integer, id bigint, outcome text, status text, lease_expires_at timestamptz, detail text)
LANGUAGE plpgsql
SET search_path FROM CURRENT
AS $$
#variable_conflict use_column
DECLARE
    it record;
    t queue_tasks%ROWTYPE;
BEGIN
    FOR it IN
        SELECT (e->>'i')::integer AS i, (e->>'id')::bigint AS tid, (e->>'tok')::uuid AS tok,
               (e->>'secs')::double precision AS secs
        FROM jsonb_array_elements(p_items) AS e
        ORDER BY (e->>'id')::bigint, (e->>'i')::integer
    LOOP
        IF it.secs IS NULL OR it.secs <= 0 THEN
            RAISE EXCEPTION 'queue_extend_lease: lease seconds must be positive (item %)', it.i USING ERRCODE = '22023';
        END IF;
        idx := it.i;
        id := it.tid;
        detail := NULL;
        UPDATE queue_tasks x
           SET lease_expires_at = now() + make_interval(secs => it.secs), updated_at = now()
         WHERE x.id = it.tid AND x.status = 'processing' AND x.lease_token = it.tok AND x.lease_expires_at > now()
        RETURNING x.* INTO t;
        IF FOUND THEN
            outcome := 'extended';
            status := t.status;
            lease_expires_at := t.lease_expires_at;
        ELSE
            lease_expires_at := NULL;
            SELECT * INTO t FROM queue_tasks x WHERE x.id = it.tid;
            IF FOUND THEN
                outcome := 'lease_lost';
                status := t.status;
                detail := queue_lease_lost_reason(t, it.tok);
            ELSE
                SELECT x.status INTO status FROM queue_tasks_archive x WHERE x.id = it.tid;
                IF FOUND THEN
                    outcome := 'lease_lost';
                    detail := 'the task is finished (' || status || ')';
                ELSE
                    outcome := 'not_found';
                    status := NULL;
                    detail := 'no task with this id';
                END IF;
            END IF;
        END IF;
        RETURN NEXT;
    END LOOP;
END $$;

-- Release tasks back to pending (the holder gives up its lease without failing the task).
-- p_items: [{"i", "id", "tok", "delay": seconds before it may be claimed again (0: keeps its place
-- at the head of its group), "count": true to count the attempt (default false: attempts - 1)}].
-- Outcomes: released | already_settled | lease_lost | not_found.
CREATE FUNCTION queue_release(p_items jsonb)
RETURNS TABLE (idx integer, id bigint, outcome text, status text, attempts integer, run_at timestamptz, detail text)
LANGUAGE plpgsql
SET search_path FROM CURRENT
AS $$
#variable_conflict use_column
DECLARE
    it record;
    t queue_tasks%ROWTYPE;
BEGIN
    FOR it IN
        SELECT (e->>'i')::integer AS i, (e->>'id')::bigint AS tid, (e->>'tok')::uuid AS tok,
               greatest(coalesce((e->>'delay')::double precision, 0), 0) AS delay,
               coalesce((e->>'count')::boolean, false) AS count_attempt
        FROM jsonb_array_elements(p_items) AS e
        ORDER BY (e->>'id')::bigint, (e->>'i')::integer
    LOOP
        idx := it.i;
        id := it.tid;
        detail := NULL;
        UPDATE queue_tasks x
           SET status = 'pending', lease_expires_at = NULL, updated_at = now(),
               attempts = CASE WHEN it.count_attempt THEN x.attempts ELSE greatest(x.attempts - 1, 0) END,
               run_at = CASE WHEN it.delay > 0 THEN now() + make_interval(secs => it.delay) ELSE x.run_at END
         WHERE x.id = it.tid AND x.status = 'processing' AND x.lease_token = it.tok AND x.lease_expires_at > now()
        RETURNING x.* INTO t;
        IF FOUND THEN
            outcome := 'released';
        ELSE
            SELECT * INTO t FROM queue_tasks x WHERE x.id = it.tid;
            IF FOUND THEN
                outcome := CASE WHEN t.lease_token = it.tok AND t.status <> 'processing' THEN 'already_settled' ELSE 'lease_lost' END;
                detail := queue_lease_lost_reason(t, it.tok);
            ELSE
                t := NULL;
                SELECT x.status INTO t.status FROM queue_tasks_archive x WHERE x.id = it.tid;
                IF FOUND THEN
                    outcome := 'lease_lost';
                    detail := 'the task is finished (' || t.status || ')';
                ELSE
                    outcome := 'not_found';
                    detail := 'no task with this id';
                END IF;
            END IF;
        END IF;
        status := t.status;
        attempts := t.attempts;
        run_at := CASE WHEN t.status = 'pending' THEN t.run_at END;
        RETURN NEXT;
    END LOOP;
END $$;

-- Requeue dead tasks by hand: the given ids (p_ids not null) or the oldest dead tasks of p_queue
-- (optionally one group), at most p_limit. A requeued task is pending now with attempts 0 and
-- requeues + 1; its last_error stays for the record. A dead task whose dedupe key belongs to a
-- live task again is skipped. Outcomes: requeued | skipped_live_duplicate | not_dead | not_found.
CREATE FUNCTION queue_requeue_dead(p_queue text, p_ids bigint[], p_group text, p_limit integer)
RETURNS TABLE (id bigint, outcome text, queue text, priority_group text, status text, last_error text, requeues integer)
LANGUAGE plpgsql
SET search_path FROM CURRENT
AS $$
#variable_conflict use_column
DECLARE
    v_id bigint;
    v_ids bigint[];
    t queue_tasks%ROWTYPE;
BEGIN
    IF p_ids IS NOT NULL THEN
        v_ids := ARRAY(SELECT DISTINCT u.x FROM unnest(p_ids) AS u(x) WHERE u.x IS NOT NULL ORDER BY u.x);
    ELSE
        v_ids := ARRAY(SELECT x.id FROM queue_tasks x
                        WHERE x.queue = p_queue AND x.status = 'dead'
                          AND (p_group IS NULL OR x.priority_group = p_group)
                        ORDER BY x.dead_at, x.id
                        LIMIT greatest(coalesce(p_limit, 100), 0));
    END IF;
    FOREACH v_id IN ARRAY v_ids
    LOOP
        id := v_id;
        SELECT * INTO t FROM queue_tasks x WHERE x.id = v_id AND (p_queue IS NULL OR x.queue = p_queue) FOR UPDATE;
        IF NOT FOUND THEN
            outcome := 'not_found';
            queue := NULL; priority_group := NULL; status := NULL; last_error := NULL; requeues := NULL;
            RETURN NEXT;
            CONTINUE;
        END IF;
        IF t.status <> 'dead' THEN
            outcome := 'not_dead';
        ELSIF t.dedupe_key IS NOT NULL AND EXISTS (
                SELECT 1 FROM queue_tasks l
                 WHERE l.queue = t.queue AND l.dedupe_key = t.dedupe_key AND l.status IN ('pending', 'processing')) THEN
            outcome := 'skipped_live_duplicate';
        ELSE
            UPDATE queue_tasks x
               SET status = 'pending', attempts = 0, run_at = now(), dead_at = NULL, lease_expires_at = NULL,
                   requeues = x.requeues + 1, updated_at = now()
             WHERE x.id = t.id AND x.status = 'dead'
            RETURNING x.* INTO t;
            outcome := 'requeued';
            PERFORM pg_notify(queue_channel(t.queue), t.queue);
        END IF;
        queue := t.queue;
        priority_group := t.priority_group;
        status := t.status;
        last_error := t.last_error;
        requeues := t.requeues;
        RETURN NEXT;
    END LOOP;
END $$;

-- Depth of one queue per group: ready (pending, run_at <= now), delayed (pending, later), in flight
-- (processing with a live lease), expired leases (processing, lease over, not swept yet), dead,
-- the oldest ready task's availability time and wait in seconds, and succeeded in the last hour.
CREATE FUNCTION queue_stats(p_queue text)
RETURNS TABLE (
    priority_group text, ready bigint, delayed bigint, in_flight bigint, expired_leases bigint, dead bigint,
    oldest_ready_at timestamptz, oldest_wait_secs double precision, succeeded_last_hour bigint
)
LANGUAGE sql STABLE
SET search_path FROM CURRENT
AS $$
    WITH live AS (
        SELECT t.priority_group,
               count(*) FILTER (WHERE t.status = 'pending' AND t.run_at <= now()) AS ready,
               count(*) FILTER (WHERE t.status = 'pending' AND t.run_at > now()) AS delayed,
               count(*) FILTER (WHERE t.status = 'processing' AND t.lease_expires_at > now()) AS in_flight,
               count(*) FILTER (WHERE t.status = 'processing' AND t.lease_expires_at <= now()) AS expired_leases,
               count(*) FILTER (WHERE t.status = 'dead') AS dead,
               min(t.run_at) FILTER (WHERE t.status = 'pending' AND t.run_at <= now()) AS oldest_ready_at
          FROM queue_tasks t
         WHERE t.queue = p_queue
         GROUP BY t.priority_group
    ), done AS (
        SELECT a.priority_group, count(*) AS succeeded_last_hour
          FROM queue_tasks_archive a
         WHERE a.queue = p_queue AND a.status = 'succeeded' AND a.finished_at > now() - interval '1 hour'
         GROUP BY a.priority_group
    )
    SELECT coalesce(l.priority_group, d.priority_group),
           coalesce(l.ready, 0), coalesce(l.delayed, 0), coalesce(l.in_flight, 0),
           coalesce(l.expired_leases, 0), coalesce(l.dead, 0), l.oldest_ready_at,
           CASE WHEN l.oldest_ready_at IS NOT NULL THEN greatest(extract(epoch FROM now() - l.oldest_ready_at)::double precision, 0) END,
           coalesce(d.succeeded_last_hour, 0)
      FROM live l
      FULL JOIN done d ON d.priority_group = l.priority_group
     ORDER BY 1
$$;

-- The most recent dead tasks of a queue (for a dead-letter report).
CREATE FUNCTION queue_list_dead(p_queue text, p_limit integer)
RETURNS SETOF queue_tasks
LANGUAGE sql STABLE
SET search_path FROM CURRENT
AS $$
    SELECT t.* FROM queue_tasks t
     WHERE t.queue = p_queue AND t.status = 'dead'
     ORDER BY t.dead_at DESC, t.id DESC
     LIMIT greatest(coalesce(p_limit, 10), 0)
$$;

-- When the queue next has claimable work: the earliest head run_at over all groups, or the
-- earliest lease expiry, whichever is first; null when the queue is empty. Reads only the first
-- entry per group of the ready index (a skip scan over groups), so it stays cheap when large.
CREATE FUNCTION queue_next_due(p_queue text) RETURNS timestamptz
LANGUAGE sql STABLE
SET search_path FROM CURRENT
AS $$
    WITH RECURSIVE groups AS (
        (SELECT t.priority_group FROM queue_tasks t
          WHERE t.queue = p_queue AND t.status = 'pending'
          ORDER BY t.priority_group LIMIT 1)
        UNION ALL
        SELECT (SELECT t.priority_group FROM queue_tasks t
                 WHERE t.queue = p_queue AND t.status = 'pending' AND t.priority_group > g.priority_group
                 ORDER BY t.priority_group LIMIT 1)
          FROM groups g
         WHERE g.priority_group IS NOT NULL
    )
    SELECT least(
        (SELECT min((SELECT t.run_at FROM queue_tasks t
                      WHERE t.queue = p_queue AND t.status = 'pending' AND t.priority_group = g.priority_group
                      ORDER BY t.run_at, t.id LIMIT 1))
           FROM groups g WHERE g.priority_group IS NOT NULL),
        (SELECT t.lease_expires_at FROM queue_tasks t
          WHERE t.queue = p_queue AND t.status = 'processing'
          ORDER BY t.lease_expires_at LIMIT 1))
$$;

-- Retention. Dead tasks older than p_dead_after_secs move to the archive (status dead); archive
-- rows older than p_archive_after_secs are deleted. p_queue null = every queue; null ages = skip
-- that step. At most p_limit rows per step. Returns the counts.
CREATE FUNCTION queue_purge(p_queue text, p_dead_after_secs double precision, p_archive_after_secs double precision, p_limit integer)
RETURNS TABLE (dead_archived integer, archive_deleted integer)
LANGUAGE plpgsql
SET search_path FROM CURRENT
AS $$
#variable_conflict use_column
BEGIN
    dead_archived := 0;
    archive_deleted := 0;
    IF p_dead_after_secs IS NOT NULL THEN
        WITH gone AS (
            DELETE FROM queue_tasks x
             WHERE x.id IN (SELECT d.id FROM queue_tasks d
                             WHERE d.status = 'dead' AND (p_queue IS NULL OR d.queue = p_queue)
                               AND d.dead_at <= now() - make_interval(secs => p_dead_after_secs)
                             ORDER BY d.dead_at LIMIT p_limit FOR UPDATE SKIP LOCKED)
               AND x.status = 'dead'
            RETURNING x.*
        ), moved AS (
            INSERT INTO queue_tasks_archive (id, queue, priority_group, status, payload, dedupe_key, attempts,
                                             max_attempts, lease_token, last_error, requeues, enqueued_at, finished_at)
            SELECT g.id, g.queue, g.priority_group, 'dead', g.payload, g.dedupe_key, g.attempts, g.max_attempts,
                   g.lease_token, g.last_error, g.requeues, g.enqueued_at, g.dead_at
              FROM gone g
            RETURNING 1
        )
        SELECT count(*)::integer INTO dead_archived FROM moved;
    END IF;
    IF p_archive_after_secs IS NOT NULL THEN
        WITH gone AS (
            DELETE FROM queue_tasks_archive x
             WHERE x.id IN (SELECT a.id FROM queue_tasks_archive a
                             WHERE (p_queue IS NULL OR a.queue = p_queue)
                               AND a.archived_at <= now() - make_interval(secs => p_archive_after_secs)
                             ORDER BY a.archived_at LIMIT p_limit)
            RETURNING 1
        )
        SELECT count(*)::integer INTO archive_deleted FROM gone;
    END IF;
    RETURN NEXT;
END $$;

INSERT INTO schema_migrations (version, name) VALUES (2, 'queue') ON CONFLICT (version) DO NOTHING;
