-- The most recent dead tasks of a queue (for a dead-letter report). p_limit: 1 to 1000 (null: 10),
-- as the node takes it (src/queue/stats.ts); a queue name outside the rules or a limit outside that
-- range is refused (SQLSTATE 22023).
CREATE OR REPLACE FUNCTION queue_list_dead(p_queue text, p_limit integer)
RETURNS SETOF queue_tasks
LANGUAGE plpgsql STABLE
SET search_path FROM CURRENT
-- A plan is kept per connection, and one made while the tables were small (or analysed small)
-- reads them sequentially for as long as the connection lives, even for a primary-key lookup:
-- sequential scans are priced out (docs/queue.md, "Scale"). JIT is off: a statement whose
-- only path is a scan would carry the priced-out cost and be compiled on every call.
SET enable_seqscan = off
SET jit = off
AS $$
BEGIN
    PERFORM ol_check_texts('queue name', NULL, ARRAY[p_queue], 'name', 200),
            ol_check_numbers('the dead task limit', NULL, ARRAY[coalesce(p_limit, 10)::double precision], 1, 1000, true);
    RETURN QUERY
    SELECT t.* FROM queue_tasks t
     WHERE t.queue = p_queue AND t.status = 'dead'
     ORDER BY t.dead_at DESC, t.id DESC
     LIMIT coalesce(p_limit, 10);
END $$;
