-- End a cancel-requested task at its holder's settle or lease extension: when task p_id is processing
-- under the live lease p_token and a cancel was requested (queue_cancel), move it to the archive as
-- 'cancelled' (lease_end 'cancelled', with the request's reason and who, and its dedupe key back) and
-- return true; otherwise change nothing and return false. Called by queue_complete, queue_fail,
-- queue_release and queue_extend_lease when their own update did not apply, before they read the
-- miss verdict. Takes the task's serial-key lock first (queue_serial_hold), then locks the task row
-- (FOR UPDATE through DELETE); a serial head that ends here hands its key to the next task
-- (queue_serial_promote).
CREATE OR REPLACE FUNCTION queue_cancel_end(p_id bigint, p_token uuid)
RETURNS boolean
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
    v_q text;
    v_k text;
BEGIN
    IF NOT EXISTS (SELECT 1 FROM queue_tasks x WHERE x.id = p_id AND x.cancel_requested_at IS NOT NULL) THEN
        RETURN false;
    END IF;
    PERFORM queue_serial_hold(ARRAY[p_id]);
    WITH gone AS (
        DELETE FROM queue_tasks x
         WHERE x.id = p_id AND x.status || '' = 'processing' AND x.lease_token = p_token
           AND x.lease_expires_at > queue_now() AND x.cancel_requested_at IS NOT NULL
        RETURNING x.*
    )
    INSERT INTO queue_tasks_archive (id, queue, priority_group, status, payload, dedupe_key, attempts,
                                     max_attempts, lease_token, last_error, requeues, enqueued_at, finished_at,
                                     lease_end, cancel_reason, cancelled_by, operator_action, operator_by, operator_reason, operator_at, serial_key)
    SELECT g.id, g.queue, g.priority_group, 'cancelled', g.payload, g.cancelled_dedupe_key, g.attempts, g.max_attempts,
           g.lease_token, g.last_error, g.requeues, g.enqueued_at, queue_now(), 'cancelled', g.cancel_reason, g.cancelled_by,
           g.operator_action, g.operator_by, g.operator_reason, g.operator_at, g.serial_key
      FROM gone g
    RETURNING queue, serial_key INTO v_q, v_k;
    IF NOT FOUND THEN
        RETURN false;
    END IF;
    IF v_k IS NOT NULL THEN
        PERFORM queue_serial_promote(ARRAY[v_q], ARRAY[v_k]);
    END IF;
    RETURN true;
END $$;
