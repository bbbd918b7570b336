-- The answer to a settle call (p_op: 'complete' | 'fail' | 'release' | 'extend') with lease token
-- p_token that did NOT apply, from the task as it is now. The one place that decides it; the whole
-- table is in docs/queue.md ("Late settles"), and a test checks the two against each other.
--   p_where:  'live' (the row is in queue_tasks), 'archive' (queue_tasks_archive) or null (no row).
--   p_status, p_token_now, p_lease_end, p_lease_expires_at, p_attempts, p_max_attempts,
--   p_dead_reason: the row's columns (queue_tasks_archive has no lease_expires_at: pass null).
-- Returns (outcome, detail), outcome one of cancelled | already_settled | lease_lost | not_found:
--   cancelled:       the task was cancelled (queue_cancel; archive status 'cancelled'): for any lease.
--   already_settled: this lease itself settled the task earlier (a harmless repeat); never for
--                    'extend' (a settled lease cannot be extended: lease_lost).
--   lease_lost:      this lease was superseded: it expired (swept or not), or another lease holds
--                    or settled the task, or the task was requeued by hand, or an operator settled it
--                    by id while this lease held it (queue_settle_by_id, lease_end 'operator').
--                    Nothing changed.
--   not_found:       no task with this id.
CREATE OR REPLACE FUNCTION queue_settle_verdict(
    p_op text, p_token uuid, p_where text, p_status text, p_token_now uuid, p_lease_end text,
    p_lease_expires_at timestamptz, p_attempts integer, p_max_attempts integer, p_dead_reason text,
    OUT outcome text, OUT detail text
)
LANGUAGE sql STABLE
SET search_path FROM CURRENT
AS $$
    SELECT v.o, v.d FROM (SELECT
        CASE
            WHEN p_where IS NULL THEN 'not_found'
            -- Cancelled (queue_cancel): every settle from any lease is told so, and must stop.
            WHEN p_status = 'cancelled' THEN 'cancelled'
            WHEN p_token_now IS NOT DISTINCT FROM p_token AND p_status <> 'processing'
                 AND coalesce(p_lease_end, 'legacy') IN ('completed', 'failed', 'gave_up', 'released', 'legacy')
                 AND p_op <> 'extend' THEN 'already_settled'
            ELSE 'lease_lost'
        END AS o,
        CASE
            WHEN p_where IS NULL THEN 'no task with this id'
            WHEN p_status = 'cancelled' THEN 'the task was cancelled: stop working on it'
            WHEN p_token_now IS NULL THEN 'this lease token never held the task (it is ' || p_status || ')'
            -- This lease, still on the row.
            WHEN p_token_now IS NOT DISTINCT FROM p_token AND p_status = 'processing' THEN
                'lease expired at ' || p_lease_expires_at::text || ' (not swept yet); the task will be handed out again'
            WHEN p_token_now IS NOT DISTINCT FROM p_token AND p_lease_end = 'expired' THEN
                CASE WHEN p_status = 'pending' THEN 'lease expired and the task was requeued (attempt ' || p_attempts || ' of ' || p_max_attempts || ' used)'
                     ELSE 'lease expired and the task is dead (' || coalesce(p_dead_reason, 'lease_expired_at_max') || ', ' || p_attempts || ' of ' || p_max_attempts || ' attempts)'
                          || CASE WHEN p_where = 'archive' THEN ', archived' ELSE '' END END
            WHEN p_token_now IS NOT DISTINCT FROM p_token AND p_lease_end = 'operator' THEN
                'an operator settled the task by hand while this lease held it (Settle by ID); it is ' || p_status || ' now: stop working on it'
            WHEN p_token_now IS NOT DISTINCT FROM p_token AND p_lease_end = 'requeued' THEN
                'the task went dead and was requeued by hand; it is ' || p_status || ' now'
            WHEN p_token_now IS NOT DISTINCT FROM p_token THEN
                'this lease already ' || CASE p_lease_end WHEN 'gave_up' THEN 'gave up on' ELSE coalesce(p_lease_end, 'settled') END || ' the task (now ' || p_status || ')'
                || CASE WHEN p_dead_reason = 'attempts_exhausted' THEN '; then a claim found its attempts used up and sent it dead' ELSE '' END
            -- Another lease since.
            WHEN p_status = 'processing' THEN 're-claimed by another lease (attempt ' || p_attempts || ' of ' || p_max_attempts || ')'
            WHEN p_status = 'succeeded' THEN 're-claimed by another lease, which completed it'
            WHEN p_status = 'dead' THEN 're-claimed by another lease; the task is dead now (' || coalesce(p_dead_reason, 'unknown reason') || ')'
                || CASE WHEN p_where = 'archive' THEN ', archived' ELSE '' END
            ELSE 're-claimed by another lease, which ' || coalesce(p_lease_end, 'ended') || ' it; the task is pending again'
        END AS d) v
$$;
