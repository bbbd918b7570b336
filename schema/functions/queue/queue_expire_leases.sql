-- Expired leases of one queue (at most p_limit, oldest first): back to pending, or dead when the
-- attempts are used up (dead_reason 'lease_expired_at_max'). lease_end becomes 'expired', so a late
-- settle from that lease is told it expired (queue_settle_verdict). p_now: the time to judge expiry
-- by (null or omitted: the queue clock moved on by this transaction's time so far, not the
-- transaction start; schema/functions/queue/queue_now.sql). The rows are chosen and locked in
-- one scan of the lease index (queue_tasks_lease_idx, oldest expiry first) with SKIP LOCKED: a row
-- another transaction holds is passed over while choosing, so the p_limit rows are the oldest
-- expired ones nobody holds. (Choosing the p_limit oldest first and locking them after left
-- nothing to sweep while those rows were held elsewhere, and every later expired task stayed
-- expired.) SKIP LOCKED never waits, so the order rows are locked in cannot deadlock.
-- A cancel-requested serial head that ends here hands its key on (queue_serial_promote) under the
-- key's lock, which is only tried (pg_try_advisory_xact_lock, never waited for: this runs inside
-- claims, and the row is already locked); a head whose key another transaction holds is left for a
-- later sweep. An expired head that is not cancelled stays its key's head (pending again or dead).
-- Returns how many rows changed.
CREATE OR REPLACE FUNCTION queue_expire_leases(p_queue text, p_limit integer DEFAULT 1000, p_now timestamptz DEFAULT NULL)
RETURNS integer
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
    n integer;
    c integer;
    v_q text[];
    v_k text[];
BEGIN
    p_now := coalesce(p_now, queue_now() + (clock_timestamp() - now()));
    -- A cancel-requested task (queue_cancel) whose lease expired ends cancelled, never runs again.
    WITH gone AS (
        DELETE FROM queue_tasks t
         WHERE t.id IN (SELECT x.id FROM queue_tasks x
                         WHERE x.queue = p_queue AND x.status = 'processing' AND x.lease_expires_at <= p_now
                           AND x.cancel_requested_at IS NOT NULL
                         ORDER BY x.lease_expires_at
                         LIMIT greatest(coalesce(p_limit, 1000), 0)
                           FOR UPDATE SKIP LOCKED)
           AND t.status = 'processing' AND t.lease_expires_at <= p_now
           AND (t.serial_key IS NULL OR pg_try_advisory_xact_lock(queue_serial_lock(t.queue, t.serial_key)))
        RETURNING t.*
    ), moved AS (
    INSERT INTO queue_tasks_archive (id, queue, priority_group, status, payload, dedupe_key, attempts, max_attempts,
                                     lease_token, last_error, requeues, enqueued_at, finished_at, lease_end,
                                     cancel_reason, cancelled_by, operator_action, operator_by, operator_reason, operator_at, serial_key)
    SELECT g.id, g.queue, g.priority_group, 'cancelled', g.payload, g.cancelled_dedupe_key, g.attempts, g.max_attempts,
           g.lease_token, g.last_error, g.requeues, g.enqueued_at, p_now, 'expired', g.cancel_reason, g.cancelled_by,
           g.operator_action, g.operator_by, g.operator_reason, g.operator_at, g.serial_key
      FROM gone g
    RETURNING queue, serial_key
    )
    SELECT count(*)::integer, array_agg(m.queue) FILTER (WHERE m.serial_key IS NOT NULL),
           array_agg(m.serial_key) FILTER (WHERE m.serial_key IS NOT NULL)
      INTO c, v_q, v_k
      FROM moved m;
    IF v_k IS NOT NULL THEN
        PERFORM queue_serial_promote(v_q, v_k);
    END IF;
    UPDATE queue_tasks t
       SET status = CASE WHEN t.attempts >= t.max_attempts THEN 'dead' ELSE 'pending' END,
           last_error = CASE WHEN t.attempts >= t.max_attempts
                             THEN 'lease expired at max attempts (' || t.attempts || ' of ' || t.max_attempts || ')'
                             ELSE 'lease expired (attempt ' || t.attempts || ' of ' || t.max_attempts || ')' END,
           dead_at = CASE WHEN t.attempts >= t.max_attempts THEN p_now END,
           dead_reason = CASE WHEN t.attempts >= t.max_attempts THEN 'lease_expired_at_max' END,
           lease_end = 'expired',
           lease_expires_at = NULL,
           updated_at = p_now
     WHERE t.id IN (SELECT x.id FROM queue_tasks x
                     WHERE x.queue = p_queue AND x.status = 'processing' AND x.lease_expires_at <= p_now
                       AND x.cancel_requested_at IS NULL
                     ORDER BY x.lease_expires_at
                     LIMIT greatest(coalesce(p_limit, 1000), 0)
                       FOR UPDATE SKIP LOCKED)
       AND t.status = 'processing' AND t.lease_expires_at <= p_now;
    GET DIAGNOSTICS n = ROW_COUNT;
    RETURN n + c;
END $$;
