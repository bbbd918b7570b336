-- Reserve p_n consecutive tags for group p_group of queue p_queue (start-time fair queuing):
--   base = max(p_vtime, the group's last tag), step = 1 / weight
--   (queue_group_weight); the tasks get base + step, base + 2 step, ..., base + p_n step and the
--   group's last tag becomes base + p_n step.
-- p_vtime: the queue's virtual time (queue_vtime), read by the caller once for all the groups it
-- tags, before the first reservation (a reservation raises a last tag, which queue_vtime's
-- fallback reads).
-- Locks the group's queue_group_tags row until commit (creating it when missing), but never waits
-- for it: when another transaction holds it, base and step are null and nothing is reserved (the
-- caller leaves its tasks untagged; the next claim tags them, queue_tag_due). So no enqueue or claim
-- ever queues behind another's tag row, and no lock cycle can form through these rows.
CREATE OR REPLACE FUNCTION queue_take_tags(p_queue text, p_group text, p_n integer, p_vtime double precision,
                                           OUT base double precision, OUT step double precision)
LANGUAGE plpgsql
SET search_path FROM CURRENT
AS $$
DECLARE
    v_last double precision;
BEGIN
    SELECT g.last_tag INTO v_last FROM queue_group_tags g
     WHERE g.queue = p_queue AND g.priority_group = p_group FOR UPDATE SKIP LOCKED;
    IF NOT FOUND THEN
        IF EXISTS (SELECT 1 FROM queue_group_tags g WHERE g.queue = p_queue AND g.priority_group = p_group) THEN
            RETURN; -- held by another transaction
        END IF;
        INSERT INTO queue_group_tags AS g (queue, priority_group, updated_at) VALUES (p_queue, p_group, queue_now()) ON CONFLICT DO NOTHING;
        SELECT g.last_tag INTO v_last FROM queue_group_tags g
         WHERE g.queue = p_queue AND g.priority_group = p_group FOR UPDATE SKIP LOCKED;
        IF NOT FOUND THEN
            RETURN;
        END IF;
    END IF;
    step := 1.0::double precision / queue_group_weight(p_queue, p_group);
    base := greatest(p_vtime, v_last);
    UPDATE queue_group_tags g SET last_tag = round((base + p_n * step) * 1e6) / 1e6, updated_at = queue_now()
     WHERE g.queue = p_queue AND g.priority_group = p_group;
END $$;
