-- Pause p_queue, or one priority group of it (p_group; null = the whole queue), recording who
-- (p_by, up to 60 characters) and why (p_reason, up to 2,000 characters): TEXT_LIMITS in
-- src/limits.ts, to which the node cuts them. While the pause is in force (docs/queue.md, "Pause
-- and resume"):
--   - a claim (queue_claim, both paths) takes nothing of the paused queue or group; the other groups
--     of a claim are served as usual;
--   - enqueues are taken as usual (the tasks wait);
--   - the trigger's wake check (queue_wake_state, queue_next_due) reports no due work of it, so the
--     Priority Dequeue Trigger starts no execution for it;
--   - leases already held keep working: their holders complete, fail, release and extend as usual.
-- Ordering against claims: the pause takes the queue's pause lock (queue_pause_lock) exclusive, so
-- it waits for the claims of the queue in flight (each holds it shared to its commit) and a claim
-- that starts after the pause committed reads the pause: no task of the paused queue or group is
-- claimed after the pause committed. The wait is bounded by the caller's lock_timeout (55P03,
-- nothing paused).
-- A group pause takes the tags off the group's pending tasks (vtag null), so that while it lasts they
-- hold the queue's virtual time back no more (queue_vtime); Resume tags them again from the virtual
-- time of the moment (queue_resume).
-- Outcomes: 'paused' (recorded now, and in queue_pause_events) or 'already_paused' (a pause of the
-- same queue or group was in force: it is kept, with its first time, reason and who; nothing
-- changed). Returns the pause in force. Refused (SQLSTATE 22023, queue_check_pause_input), as the node refuses it
-- (src/queue/pause.ts): a queue or group name the node refuses, a reason over 2,000 characters, a
-- who over 60.
CREATE OR REPLACE FUNCTION queue_pause(p_queue text, p_group text, p_reason text, p_by text)
RETURNS TABLE (outcome text, queue text, priority_group text, paused_at timestamptz, paused_by text, reason text, untagged integer)
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
    v_group text := coalesce(p_group, '');
    v_row queue_pauses%ROWTYPE;
    v_n integer := 0;
BEGIN
    PERFORM queue_check_pause_input('queue_pause', p_queue, p_group, p_reason, p_by);
    -- Wait for the claims of the queue in flight (and hold new ones until this commits).
    PERFORM pg_advisory_xact_lock(queue_pause_lock(p_queue));
    INSERT INTO queue_pauses AS p (queue, priority_group, paused_at, paused_by, reason)
    VALUES (p_queue, v_group, queue_now(), p_by, p_reason)
    ON CONFLICT ON CONSTRAINT queue_pauses_pkey DO NOTHING
    RETURNING p.* INTO v_row;
    IF FOUND THEN
        outcome := 'paused';
        INSERT INTO queue_pause_events (queue, priority_group, action, at, by_whom, reason)
        VALUES (p_queue, v_group, 'paused', v_row.paused_at, p_by, p_reason);
        IF p_group IS NOT NULL THEN
            UPDATE queue_tasks t SET vtag = NULL
             WHERE t.queue = p_queue AND t.priority_group = p_group AND t.status = 'pending' AND t.vtag IS NOT NULL;
            GET DIAGNOSTICS v_n = ROW_COUNT;
        END IF;
    ELSE
        outcome := 'already_paused';
        SELECT * INTO v_row FROM queue_pauses p WHERE p.queue = p_queue AND p.priority_group = v_group;
    END IF;
    queue := p_queue;
    priority_group := p_group;
    paused_at := v_row.paused_at;
    paused_by := v_row.paused_by;
    reason := v_row.reason;
    untagged := v_n;
    RETURN NEXT;
END $$;
