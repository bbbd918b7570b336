-- Resume p_queue, or one priority group of it (p_group; null = the whole queue): the pause of
-- exactly that queue or group ends (a group paused on its own stays paused when its queue is
-- resumed, and a group resumed stays held while its whole queue is paused). Records who (p_by, up
-- to 60 characters) and why (p_reason, up to 2,000 characters) in queue_pause_events.
-- Fairness after a group's pause (docs/queue.md, "Pause and resume"): the group's pending tasks
-- lose their tags (vtag null) and its last tag is set back to 0, so the next claim of the group
-- tags them from the queue's virtual time of that moment (queue_tag_due, queue_take_tags: base =
-- max(virtual time, last tag)). The group then takes its weighted share from the resume on: no
-- burst from tags it held before the pause (which the other groups' claims have long passed), and
-- no penalty for tags handed to tasks enqueued while it was paused. A whole-queue resume keeps the
-- tags: every group of the queue stood still alike.
-- Sends pg_notify(queue_channel(p_queue), p_queue) (delivered at commit), as an enqueue of ready
-- work does, so the triggers of the queue wake at once.
-- Outcomes: 'resumed' (the pause ended now) or 'not_paused' (no pause of exactly that queue or
-- group was in force: nothing changed, nothing sent). Refused (SQLSTATE 22023) as queue_pause.
CREATE OR REPLACE FUNCTION queue_resume(p_queue text, p_group text, p_reason text, p_by text)
RETURNS TABLE (outcome text, queue text, priority_group text, paused_at timestamptz, paused_by text, resumed_at timestamptz, untagged integer)
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
    PERFORM queue_check_pause_input('queue_resume', p_queue, p_group, p_reason, p_by);
    queue := p_queue;
    priority_group := p_group;
    DELETE FROM queue_pauses p WHERE p.queue = p_queue AND p.priority_group = v_group RETURNING p.* INTO v_row;
    IF NOT FOUND THEN
        outcome := 'not_paused';
        untagged := 0;
        RETURN NEXT;
        RETURN;
    END IF;
    outcome := 'resumed';
    paused_at := v_row.paused_at;
    paused_by := v_row.paused_by;
    resumed_at := queue_now();
    INSERT INTO queue_pause_events (queue, priority_group, action, at, by_whom, reason)
    VALUES (p_queue, v_group, 'resumed', resumed_at, p_by, p_reason);
    IF p_group IS NOT NULL THEN
        UPDATE queue_tasks t SET vtag = NULL
         WHERE t.queue = p_queue AND t.priority_group = p_group AND t.status = 'pending' AND t.vtag IS NOT NULL;
        UPDATE queue_group_tags g SET last_tag = 0, updated_at = queue_now()
         WHERE g.queue = p_queue AND g.priority_group = p_group;
        SELECT count(*)::integer INTO v_n FROM queue_tasks t
         WHERE t.queue = p_queue AND t.priority_group = p_group AND t.status = 'pending';
    END IF;
    untagged := v_n;
    PERFORM pg_notify(queue_channel(p_queue), p_queue);
    RETURN NEXT;
END $$;
