-- Requeue dead tasks by hand: the given ids (p_ids not null) or the oldest dead tasks of p_queue
-- (optionally one group), at most p_limit. A requeued task is pending now with attempts 0 and
-- requeues + 1; its last_error stays for the record. A dead task whose dedupe key belongs to a
-- live task again is skipped. Outcomes: requeued | skipped_live_duplicate | not_dead | not_found.
CREATE OR REPLACE FUNCTION queue_requeue_dead(p_queue text, p_ids bigint[], p_group text, p_limit integer)
RETURNS TABLE (id bigint, outcome text, queue text, priority_group text, status text, last_error text, requeues integer)
LANGUAGE plpgsql
SET search_path FROM CURRENT
AS $$
#variable_conflict use_column
DECLARE
    v_id bigint;
    v_ids bigint[];
    t queue_tasks%ROWTYPE;
BEGIN
    IF p_ids IS NOT NULL THEN
        v_ids := ARRAY(SELECT DISTINCT u.x FROM unnest(p_ids) AS u(x) WHERE u.x IS NOT NULL ORDER BY u.x);
    ELSE
        v_ids := ARRAY(SELECT x.id FROM queue_tasks x
                        WHERE x.queue = p_queue AND x.status = 'dead'
                          AND (p_group IS NULL OR x.priority_group = p_group)
                        ORDER BY x.dead_at, x.id
                        LIMIT greatest(coalesce(p_limit, 100), 0));
    END IF;
    FOREACH v_id IN ARRAY v_ids
    LOOP
        id := v_id;
        SELECT * INTO t FROM queue_tasks x WHERE x.id = v_id AND (p_queue IS NULL OR x.queue = p_queue) FOR UPDATE;
        IF NOT FOUND THEN
            outcome := 'not_found';
            queue := NULL; priority_group := NULL; status := NULL; last_error := NULL; requeues := NULL;
            RETURN NEXT;
            CONTINUE;
        END IF;
        IF t.status <> 'dead' THEN
            outcome := 'not_dead';
        ELSIF t.dedupe_key IS NOT NULL AND EXISTS (
                SELECT 1 FROM queue_tasks l
                 WHERE l.queue = t.queue AND l.dedupe_key = t.dedupe_key AND l.status IN ('pending', 'processing')) THEN
            outcome := 'skipped_live_duplicate';
        ELSE
            UPDATE queue_tasks x
               SET status = 'pending', attempts = 0, run_at = now(), dead_at = NULL, lease_expires_at = NULL,
                   requeues = x.requeues + 1, updated_at = now()
             WHERE x.id = t.id AND x.status = 'dead'
            RETURNING x.* INTO t;
            outcome := 'requeued';
            PERFORM pg_notify(queue_channel(t.queue), t.queue);
        END IF;
        queue := t.queue;
        priority_group := t.priority_group;
        status := t.status;
        last_error := t.last_error;
        requeues := t.requeues;
        RETURN NEXT;
    END LOOP;
END $$;
