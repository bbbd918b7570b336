-- When the queue next has claimable work: the earliest head run_at over all groups, or the
-- earliest lease expiry, whichever is first; null when the queue is empty. Reads only the first
-- entry per group of the ready index (a skip scan over groups), so it stays cheap when large.
-- Paused work (queue_pause) is not claimable: null while the whole queue is paused, and a paused
-- group's tasks and leases are left out.
-- A queue name the node refuses is refused (SQLSTATE 22023), as by every entry point.
CREATE OR REPLACE FUNCTION queue_next_due(p_queue text) RETURNS timestamptz
LANGUAGE plpgsql STABLE
SET search_path FROM CURRENT
-- A plan is kept per connection, and one made while the tables were small (or analysed small)
-- reads them sequentially for as long as the connection lives, even for a primary-key lookup:
-- sequential scans are priced out (docs/queue.md, "Scale"). JIT is off: a statement whose
-- only path is a scan would carry the priced-out cost and be compiled on every call.
SET enable_seqscan = off
SET jit = off
AS $$
DECLARE
    v_paused text[];
BEGIN
    IF p_queue IS NULL OR p_queue !~ '^[ -~]+$' OR length(p_queue) > 200 OR p_queue !~ '[^ ]' THEN
        PERFORM ol_check_texts('queue name', NULL, ARRAY[p_queue], 'name', 200);
    END IF;
    v_paused := queue_paused_groups(p_queue);
    IF '' = ANY (v_paused) THEN
        RETURN NULL;
    END IF;
    RETURN (
    WITH RECURSIVE groups AS (
        (SELECT t.priority_group FROM queue_tasks t
          WHERE t.queue = p_queue AND t.status = 'pending' AND NOT t.serial_wait
          ORDER BY t.priority_group LIMIT 1)
        UNION ALL
        SELECT (SELECT t.priority_group FROM queue_tasks t
                 WHERE t.queue = p_queue AND t.status = 'pending' AND NOT t.serial_wait AND t.priority_group > g.priority_group
                 ORDER BY t.priority_group LIMIT 1)
          FROM groups g
         WHERE g.priority_group IS NOT NULL
    )
    SELECT least(
        (SELECT min((SELECT t.run_at FROM queue_tasks t
                      WHERE t.queue = p_queue AND t.status = 'pending' AND NOT t.serial_wait AND t.priority_group = g.priority_group
                      ORDER BY t.run_at, t.id LIMIT 1))
           FROM groups g WHERE g.priority_group IS NOT NULL AND (v_paused IS NULL OR g.priority_group <> ALL (v_paused))),
        (SELECT t.lease_expires_at FROM queue_tasks t
          WHERE t.queue = p_queue AND t.status = 'processing'
            AND (v_paused IS NULL OR t.priority_group <> ALL (v_paused))
          ORDER BY t.lease_expires_at LIMIT 1)));
END $$;
