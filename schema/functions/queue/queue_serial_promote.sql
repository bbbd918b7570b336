-- After a key's head left queue_tasks: for each (p_queues[i], p_keys[i]) without a head (no row of
-- the key with serial_wait false), the oldest blocked task of the key (lowest id: enqueue order)
-- becomes its head (serial_wait false). It is pending and untagged, so the first claim after it is
-- due tags it as if enqueued then (queue_tag_due); or dead, when an operator failed it while it was
-- blocked (a dead head holds its key, docs/queue.md "One at a time per key"). Each queue that gained a
-- due head is notified with its name, one that gained only a later one with '' (as Enqueue
-- notifies). The caller holds the keys' locks (queue_serial_hold, or queue_enqueue's); the rows
-- promoted are locked by the UPDATE, and nobody holds a blocked row without the key first except an
-- enqueue replacing its payload, which waits for nothing else. Null keys are ignored. Returns how
-- many tasks became heads. Not an entry point.
CREATE OR REPLACE FUNCTION queue_serial_promote(p_queues text[], p_keys text[]) RETURNS integer
LANGUAGE plpgsql
SET search_path FROM CURRENT
-- A plan is kept per connection, and one made while the tables were small (or analysed small)
-- reads them sequentially for as long as the connection lives, even for a primary-key lookup:
-- sequential scans are priced out (docs/queue.md, "Scale"). JIT is off: a statement whose
-- only path is a scan would carry the priced-out cost and be compiled on every call.
SET enable_seqscan = off
SET jit = off
AS $$
DECLARE
    v_n integer;
    v_ready text[];
    v_later text[];
    v_q text;
BEGIN
    WITH k AS (
        SELECT DISTINCT u.q, u.k FROM unnest(p_queues, p_keys) AS u(q, k) WHERE u.k IS NOT NULL
    ), nxt AS (
        SELECT (SELECT b.id FROM queue_tasks b
                 WHERE b.queue = k.q AND b.serial_key = k.k AND b.serial_wait
                 ORDER BY b.id LIMIT 1) AS id
          FROM k
          -- One probe of queue_tasks_serial_head_idx per key (migration 0019: only the keys' heads
          -- and dead tasks are in it, so the read does not grow with the key's backlog; LIMIT 1:
          -- never turned into an anti join over a whole index, which a plan made on a small table
          -- did: every serial task of every queue per call).
          LEFT JOIN LATERAL (SELECT true AS found FROM queue_tasks h
                              WHERE h.queue = k.q AND h.serial_key = k.k AND NOT h.serial_wait
                              LIMIT 1) h ON true
         WHERE h.found IS NULL
    ), up AS (
        -- The ids as one array, each found by primary key (as a semi join, a plan made on a small
        -- table read the whole primary key once per call).
        UPDATE queue_tasks t SET serial_wait = false, updated_at = queue_now()
         WHERE t.id = ANY (ARRAY(SELECT nxt.id FROM nxt WHERE nxt.id IS NOT NULL)) AND t.serial_wait
        RETURNING t.queue, t.status, t.run_at
    )
    SELECT count(*)::integer,
           coalesce(array_agg(DISTINCT up.queue) FILTER (WHERE up.status = 'pending' AND up.run_at <= queue_now()), '{}'),
           coalesce(array_agg(DISTINCT up.queue) FILTER (WHERE up.status = 'pending' AND up.run_at > queue_now()), '{}')
      INTO v_n, v_ready, v_later
      FROM up;
    FOREACH v_q IN ARRAY v_ready LOOP
        PERFORM pg_notify(queue_channel(v_q), v_q);
    END LOOP;
    FOREACH v_q IN ARRAY v_later LOOP
        IF NOT v_q = ANY (v_ready) THEN
            PERFORM pg_notify(queue_channel(v_q), '');
        END IF;
    END LOOP;
    RETURN v_n;
END $$;
