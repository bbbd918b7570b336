-- What an operator needs to see before a Postgres queue slows down (docs/queue.md, "Long
-- transactions and vacuum"). One row:
--   groups_oldest_pending: {"group": seconds since the oldest pending task (ready or delayed) of
--     that group in p_queue was enqueued, ...}; {} when nothing is pending.
--   live_tuples, dead_tuples, last_vacuum, last_autovacuum, vacuum_count, autovacuum_count:
--     pg_stat_user_tables for queue_tasks (statistics, updated within a second or so; null/0 when
--     the statistics were reset). autovacuum_on: the server's autovacuum setting.
--   xmin_*: the open transaction holding back the xmin horizon the longest (pg_stat_activity
--     backend_xmin, this session excluded): its xid age (transactions), how long its transaction has
--     been open (seconds), its pid and state. Dead tuples newer than that horizon cannot be removed
--     by any vacuum. Other roles' sessions are only visible with pg_read_all_stats (or superuser);
--     without it those fields cover only this role's sessions.
--   slot_xmin_age: the largest xid age of a replication slot's xmin (also holds the horizon), or null.
--   prepared_xacts: prepared (two-phase) transactions still open (they hold the horizon too).
--   pauses: the pauses of p_queue in force (queue_pause), [{"group": name or null for the whole
--     queue, "paused_at", "paused_by", "reason"}] in group order (the whole queue first); [] when
--     nothing is paused.
-- Read-only; reads statistics views, not the queue's rows (but for groups_oldest_pending, one
-- aggregate over the queue's pending rows).
-- A queue name the node refuses is refused (SQLSTATE 22023), as by every entry point.
CREATE OR REPLACE FUNCTION queue_health(p_queue text)
RETURNS TABLE (
    groups_oldest_pending jsonb, live_tuples bigint, dead_tuples bigint, last_vacuum timestamptz,
    last_autovacuum timestamptz, vacuum_count bigint, autovacuum_count bigint, autovacuum_on boolean,
    xmin_age_xids integer, xmin_xact_secs double precision, xmin_pid integer, xmin_state text,
    slot_xmin_age integer, prepared_xacts bigint, pauses jsonb
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
    SELECT
        (SELECT coalesce(jsonb_object_agg(g.priority_group, g.secs), '{}'::jsonb)
           FROM (SELECT t.priority_group, greatest(extract(epoch FROM queue_now() - min(t.enqueued_at))::double precision, 0) AS secs
                   FROM queue_tasks t
                  WHERE t.queue = p_queue AND t.status = 'pending'
                  GROUP BY t.priority_group) g),
        s.n_live_tup, s.n_dead_tup, s.last_vacuum, s.last_autovacuum, s.vacuum_count, s.autovacuum_count,
        current_setting('autovacuum')::boolean,
        x.xid_age, x.xact_secs, x.pid, x.state,
        (SELECT max(age(r.xmin)) FROM pg_replication_slots r WHERE r.xmin IS NOT NULL),
        (SELECT count(*) FROM pg_prepared_xacts),
        (SELECT coalesce(jsonb_agg(jsonb_build_object('group', nullif(p.priority_group, ''), 'paused_at', p.paused_at,
                                                      'paused_by', p.paused_by, 'reason', p.reason)
                                   ORDER BY p.priority_group), '[]'::jsonb)
           FROM queue_pauses p WHERE p.queue = p_queue)
      FROM (SELECT 1) one
      LEFT JOIN pg_stat_user_tables s ON s.relid = 'queue_tasks'::regclass
      LEFT JOIN LATERAL (
            SELECT age(a.backend_xmin) AS xid_age,
                   greatest(extract(epoch FROM now() - a.xact_start)::double precision, 0) AS xact_secs,
                   a.pid, a.state
              FROM pg_stat_activity a
             WHERE a.backend_xmin IS NOT NULL AND a.pid <> pg_backend_pid()
             ORDER BY age(a.backend_xmin) DESC
             LIMIT 1) x ON true;
END $$;
