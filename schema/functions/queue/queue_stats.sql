-- Depth of one queue per group: ready (pending, run_at <= now), delayed (pending, later), in flight
-- (processing with a live lease), expired leases (processing, lease over, not swept yet), dead,
-- the oldest ready task's availability time and wait in seconds, and succeeded in the last hour.
-- A queue name the node refuses is refused (SQLSTATE 22023), as by every entry point.
CREATE OR REPLACE FUNCTION queue_stats(p_queue text)
RETURNS TABLE (
    priority_group text, ready bigint, delayed bigint, in_flight bigint, expired_leases bigint, dead bigint,
    oldest_ready_at timestamptz, oldest_wait_secs double precision, succeeded_last_hour bigint
)
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
BEGIN
    IF p_queue IS NULL OR p_queue !~ '^[ -~]+$' OR length(p_queue) > 200 OR p_queue !~ '[^ ]' THEN
        PERFORM ol_check_texts('queue name', NULL, ARRAY[p_queue], 'name', 200);
    END IF;
    RETURN QUERY
    WITH live AS (
        SELECT t.priority_group,
               count(*) FILTER (WHERE t.status = 'pending' AND t.run_at <= queue_now()) AS ready,
               count(*) FILTER (WHERE t.status = 'pending' AND t.run_at > queue_now()) AS delayed,
               count(*) FILTER (WHERE t.status = 'processing' AND t.lease_expires_at > queue_now()) AS in_flight,
               count(*) FILTER (WHERE t.status = 'processing' AND t.lease_expires_at <= queue_now()) AS expired_leases,
               count(*) FILTER (WHERE t.status = 'dead') AS dead,
               min(t.run_at) FILTER (WHERE t.status = 'pending' AND t.run_at <= queue_now()) AS oldest_ready_at
          FROM queue_tasks t
         WHERE t.queue = p_queue
         GROUP BY t.priority_group
    ), done AS (
        SELECT a.priority_group, count(*) AS succeeded_last_hour
          FROM queue_tasks_archive a
         WHERE a.queue = p_queue AND a.status = 'succeeded' AND a.finished_at > queue_now() - interval '1 hour'
         GROUP BY a.priority_group
    )
    SELECT coalesce(l.priority_group, d.priority_group),
           coalesce(l.ready, 0), coalesce(l.delayed, 0), coalesce(l.in_flight, 0),
           coalesce(l.expired_leases, 0), coalesce(l.dead, 0), l.oldest_ready_at,
           CASE WHEN l.oldest_ready_at IS NOT NULL THEN greatest(extract(epoch FROM queue_now() - l.oldest_ready_at)::double precision, 0) END,
           coalesce(d.succeeded_last_hour, 0)
      FROM live l
      FULL JOIN done d ON d.priority_group = l.priority_group
     ORDER BY 1;
END $$;
