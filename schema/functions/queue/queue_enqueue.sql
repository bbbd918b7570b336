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
-- Items with "n": false ask for no notification: a queue all of whose items say so is not notified.
CREATE OR REPLACE FUNCTION queue_enqueue(p_items jsonb)
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
    v_quiet text[];
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
    -- Notify option: a queue all of whose items say "n": false is not notified here (the caller
    -- notifies after its commit, or not at all; see "Notifications" in docs/queue.md).
    v_quiet := ARRAY(SELECT e->>'q' FROM jsonb_array_elements(p_items) AS e
                      GROUP BY e->>'q' HAVING bool_and((e->>'n')::boolean IS FALSE));
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
END $$;
