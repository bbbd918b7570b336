-- Record the weights a Dequeue claims p_queue with (queue_group_weights), for the groups whose
-- recorded weight (or default, queue_group_weight) differs. Called by queue_claim only when one
-- differs. For such a group, the tags of its pending tasks ahead of the queue's virtual time V are
-- rescaled to the new weight (tag' = V + (tag - V) * old / new), and so is its last tag, so the new
-- weight applies to the backlog already queued, not only to tasks enqueued later. Cost: one update
-- of that group's pending tasks (a weight change is rare: the first claim of a queue with custom
-- weights, or an edited Dequeue). A group whose tag row another transaction holds is left for a
-- later claim (never waits). Returns the number of groups changed.
CREATE OR REPLACE FUNCTION queue_set_weights(p_queue text, p_groups text[], p_weights integer[]) RETURNS integer
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
    r record;
    v_vtime double precision;
    v_last double precision;
    v_n integer := 0;
BEGIN
    v_vtime := queue_vtime(p_queue);
    FOR r IN
        SELECT u.g, u.w, queue_group_weight(p_queue, u.g) AS old_w,
               EXISTS (SELECT 1 FROM queue_group_weights w WHERE w.queue = p_queue AND w.priority_group = u.g AND w.weight = u.w) AS same
          FROM unnest(p_groups, p_weights) AS u(g, w)
         ORDER BY u.g
    LOOP
        CONTINUE WHEN r.same;
        IF r.old_w <> r.w THEN
            SELECT g.last_tag INTO v_last FROM queue_group_tags g
             WHERE g.queue = p_queue AND g.priority_group = r.g FOR UPDATE SKIP LOCKED;
            IF NOT FOUND THEN
                IF EXISTS (SELECT 1 FROM queue_group_tags g WHERE g.queue = p_queue AND g.priority_group = r.g) THEN
                    CONTINUE; -- busy: a later claim records it
                END IF;
            ELSE
                UPDATE queue_group_tags g
                   SET last_tag = v_vtime + (g.last_tag - v_vtime) * r.old_w / r.w, updated_at = queue_now()
                 WHERE g.queue = p_queue AND g.priority_group = r.g AND g.last_tag > v_vtime;
            END IF;
            UPDATE queue_tasks t
               SET vtag = round((v_vtime + (t.vtag - v_vtime) * r.old_w / r.w) * 1e6) / 1e6
             WHERE t.id IN (SELECT y.id FROM queue_tasks y
                             WHERE y.queue = p_queue AND y.priority_group = r.g AND y.status = 'pending'
                               AND y.vtag > v_vtime
                             ORDER BY y.id FOR UPDATE SKIP LOCKED);
        END IF;
        INSERT INTO queue_group_weights AS w (queue, priority_group, weight, updated_at) VALUES (p_queue, r.g, r.w, queue_now())
        ON CONFLICT (queue, priority_group) DO UPDATE SET weight = excluded.weight, updated_at = queue_now();
        v_n := v_n + 1;
    END LOOP;
    RETURN v_n;
END $$;
