-- Retention. Dead tasks older than p_dead_after_secs move to the archive (status dead); archive
-- rows older than p_archive_after_secs are deleted. p_queue null = every queue; null ages = skip
-- that step. At most p_limit rows per step. Rows are chosen and locked in one scan with SKIP
-- LOCKED: a dead task a requeue holds is passed over (left for the next run) and the next oldest
-- taken instead; archive rows likewise (two purges at once never wait on each other, and rows held
-- elsewhere never stop older-than-retention rows behind them from going). With the archive step,
-- throttle windows that have ended are deleted too (at most p_limit, not counted). Returns the counts.
-- Refused (SQLSTATE 22023), as the node refuses it (src/queue/purge.ts): a queue name outside the
-- rules (null = every queue), retentions outside 0 .. 3153600000 seconds, a limit outside
-- 1 .. 100000.
-- A purged dead head of a serial key hands the key to its next task (queue_serial_promote) under
-- the key's lock, only tried (pg_try_advisory_xact_lock: rows are locked first here, so waiting for a
-- key could deadlock with a Cancel or Settle by ID that holds it): a task whose key is busy is left
-- for the next run, like a row held elsewhere.
CREATE OR REPLACE FUNCTION queue_purge(p_queue text, p_dead_after_secs double precision, p_archive_after_secs double precision, p_limit integer)
RETURNS TABLE (dead_archived integer, archive_deleted integer)
LANGUAGE plpgsql
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
    v_dead double precision := p_dead_after_secs;
    v_arch double precision := p_archive_after_secs;
    v_limit integer := coalesce(p_limit, 10000);
    v_q text[];
    v_k text[];
BEGIN
    IF p_queue IS NOT NULL THEN
        PERFORM ol_check_texts('queue name', NULL, ARRAY[p_queue], 'name', 200);
    END IF;
    -- At most 100 years (3153600000 s): queue_now() minus a larger age could leave the timestamp range.
    PERFORM ol_check_numbers('the dead retention (seconds)', NULL, ARRAY[coalesce(p_dead_after_secs, 0)], 0, 3153600000, false),
            ol_check_numbers('the archive retention (seconds)', NULL, ARRAY[coalesce(p_archive_after_secs, 0)], 0, 3153600000, false),
            ol_check_numbers('the purge limit', NULL, ARRAY[v_limit::double precision], 1, 100000, true);
    dead_archived := 0;
    archive_deleted := 0;
    IF p_dead_after_secs IS NOT NULL THEN
        -- The oldest dead tasks: of one queue through queue_tasks_dead_idx (queue, dead_at, id), the
        -- index read in order from the queue's oldest; of every queue, all of them by dead_at. Two
        -- arms, because one test (p_queue IS NULL OR d.queue = p_queue) cannot use the queue column
        -- and read every dead task of every queue for one queue's purge; the arm a call does not
        -- need is skipped by its one-time filter. Then each picked task by primary key (status || '':
        -- no partial index's predicate follows, so no plan reads queue_tasks_dead_idx instead).
        WITH pick AS MATERIALIZED (
            SELECT d.id FROM (SELECT d.id FROM queue_tasks d
                               WHERE p_queue IS NOT NULL AND d.queue = p_queue AND d.status = 'dead'
                                 AND d.dead_at <= queue_now() - make_interval(secs => greatest(v_dead, 0))
                               ORDER BY d.dead_at LIMIT v_limit
                                 FOR UPDATE SKIP LOCKED) d
            UNION ALL
            SELECT d.id FROM (SELECT d.id FROM queue_tasks d
                               WHERE p_queue IS NULL AND d.status = 'dead'
                                 AND d.dead_at <= queue_now() - make_interval(secs => greatest(v_dead, 0))
                               ORDER BY d.dead_at LIMIT v_limit
                                 FOR UPDATE SKIP LOCKED) d
        ), gone AS (
            DELETE FROM queue_tasks x
             WHERE x.id = ANY (ARRAY(SELECT pick.id FROM pick))
               AND x.status || '' = 'dead'
               AND (x.serial_key IS NULL OR pg_try_advisory_xact_lock(queue_serial_lock(x.queue, x.serial_key)))
            RETURNING x.*
        ), moved AS (
            INSERT INTO queue_tasks_archive (id, queue, priority_group, status, payload, dedupe_key, attempts,
                                             max_attempts, lease_token, last_error, requeues, enqueued_at, finished_at,
                                             lease_end, dead_reason, archived_at, operator_action, operator_by,
                                             operator_reason, operator_at, serial_key)
            SELECT g.id, g.queue, g.priority_group, 'dead', g.payload, g.dedupe_key, g.attempts, g.max_attempts,
                   g.lease_token, g.last_error, g.requeues, g.enqueued_at, g.dead_at, g.lease_end, g.dead_reason, queue_now(),
                   g.operator_action, g.operator_by, g.operator_reason, g.operator_at, g.serial_key
              FROM gone g
            RETURNING queue, serial_key
        )
        SELECT count(*)::integer, array_agg(m.queue) FILTER (WHERE m.serial_key IS NOT NULL),
               array_agg(m.serial_key) FILTER (WHERE m.serial_key IS NOT NULL)
          INTO dead_archived, v_q, v_k
          FROM moved m;
        IF v_k IS NOT NULL THEN
            PERFORM queue_serial_promote(v_q, v_k);
        END IF;
    END IF;
    IF p_archive_after_secs IS NOT NULL THEN
        WITH gone AS (
            DELETE FROM queue_tasks_archive x
             WHERE x.id = ANY (ARRAY(SELECT a.id FROM queue_tasks_archive a
                                      WHERE (p_queue IS NULL OR a.queue = p_queue)
                                        AND a.archived_at <= queue_now() - make_interval(secs => greatest(v_arch, 0))
                                      ORDER BY a.archived_at LIMIT v_limit
                                        FOR UPDATE SKIP LOCKED))
            RETURNING 1
        )
        SELECT count(*)::integer INTO archive_deleted FROM gone;
        -- Throttle windows that have ended (queue_enqueue; an ended window decides as no row does).
        DELETE FROM queue_throttle_windows x
         WHERE (x.queue, x.dedupe_key) IN (SELECT w.queue, w.dedupe_key FROM queue_throttle_windows w
                                            WHERE (p_queue IS NULL OR w.queue = p_queue) AND w.ends_at <= queue_now()
                                            ORDER BY w.ends_at LIMIT v_limit
                                              FOR UPDATE SKIP LOCKED)
           AND x.ends_at <= queue_now();
    END IF;
    RETURN NEXT;
END $$;
