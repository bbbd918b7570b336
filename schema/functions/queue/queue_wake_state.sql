-- What the trigger needs to decide whether to start a consumer: when work its consumer can claim
-- is next due, and the queue's claim counter (to tell afterwards whether that consumer claimed).
--   p_groups: the groups the consumer's Dequeue lists; null = every group (as queue_next_due).
-- Returns one row:
--   due_at  the earliest head run_at among the listed groups' pending tasks, or the earliest lease
--           expiry among the listed groups' processing tasks, whichever is first; null when none.
--   claims  a progress marker: the id of the first claimable task of the listed groups in claim order
--           (tag, id), 0 when none is tagged and ready. A claim takes that task first, so the
--           marker unchanged between two calls while work is due = nobody claimed from these
--           groups in between. It is read from the tasks, not counted: a counter would be a row
--           every claim had to lock, and the trigger only compares the marker for equality.
--   now     the queue's clock (queue_now()), to turn due_at into a delay.
-- Paused work (queue_pause) is not due: a paused group is left out of p_groups, and with the whole
-- queue (or every listed group) paused due_at is null and claims 0, so the trigger starts no
-- execution for it (Resume notifies the queue's channel, which wakes it).
-- Reads the first entry per listed group of the ready index and the lease index; writes nothing.
-- A queue name the node refuses is refused (SQLSTATE 22023), as by every entry point.
CREATE OR REPLACE FUNCTION queue_wake_state(p_queue text, p_groups text[])
RETURNS TABLE (due_at timestamptz, claims bigint, now timestamptz)
LANGUAGE plpgsql STABLE
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
    v_paused text[];
BEGIN
    IF p_queue IS NULL OR p_queue !~ '^[ -~]+$' OR length(p_queue) > 200 OR p_queue !~ '[^ ]' THEN
        PERFORM ol_check_texts('queue name', NULL, ARRAY[p_queue], 'name', 200);
    END IF;
    IF p_groups IS NOT NULL AND EXISTS (SELECT 1 FROM unnest(p_groups) AS g(n) WHERE g.n IS NULL OR g.n !~ '^[ -~]+$' OR length(g.n) > 100 OR g.n !~ '[^ ]') THEN
        PERFORM ol_check_texts('priority group', NULL, p_groups, 'name', 100);
    END IF;
    v_paused := queue_paused_groups(p_queue);
    IF v_paused IS NOT NULL AND p_groups IS NOT NULL THEN
        p_groups := coalesce((SELECT array_agg(g.n) FROM unnest(p_groups) AS g(n) WHERE g.n <> ALL (v_paused)), '{}');
    END IF;
    IF v_paused IS NOT NULL AND ('' = ANY (v_paused) OR cardinality(p_groups) = 0) THEN
        RETURN QUERY SELECT NULL::timestamptz, 0::bigint, queue_now();
        RETURN;
    END IF;
    RETURN QUERY
    SELECT CASE WHEN p_groups IS NULL THEN queue_next_due(p_queue) ELSE least(
               (SELECT min(h.run_at)
                  FROM unnest(p_groups) AS g(name)
                 CROSS JOIN LATERAL (SELECT t.run_at FROM queue_tasks t
                                      WHERE t.queue = p_queue AND t.status = 'pending' AND NOT t.serial_wait AND t.priority_group = g.name
                                      ORDER BY t.run_at, t.id LIMIT 1) h),
               (SELECT min(l.lease_expires_at)
                  FROM unnest(p_groups) AS g(name)
                 CROSS JOIN LATERAL (SELECT t.lease_expires_at FROM queue_tasks t
                                      WHERE t.queue = p_queue AND t.status = 'processing' AND t.priority_group = g.name
                                      ORDER BY t.lease_expires_at LIMIT 1) l))
           END,
           coalesce((SELECT t.id FROM queue_tasks t
                      WHERE t.queue = p_queue AND t.status = 'pending' AND t.vtag IS NOT NULL AND t.run_at <= queue_now()
                        AND (p_groups IS NULL OR t.priority_group = ANY (p_groups))
                        AND (v_paused IS NULL OR t.priority_group <> ALL (v_paused))
                      ORDER BY t.vtag, t.id LIMIT 1), 0),
           queue_now();
END $$;
