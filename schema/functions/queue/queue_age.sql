-- The aging sweep of a claim (queue_claim_full, step 4; docs/queue.md, "Aging"). Not an entry point:
-- queue_claim validated the arguments. p_groups: the claim's groups; p_limit: its batch size;
-- p_aging_secs: its aging interval in seconds (> 0); p_now: the claim's time.
-- A sweep runs when a listed group is due: its oldest pending task that waited longer than the
-- interval (run_at before p_now - interval) is behind the head tag (the smallest tag of the listed
-- groups' ready tasks) and the group was not swept in the last sweep gap, a tenth of the interval
-- but at most 1 second (queue_group_weights.aging_swept_at). The sweep locks the listed groups' rows
-- with FOR NO KEY UPDATE SKIP LOCKED (rows another claim holds are left to it), stamps them, and
-- gives the head tag to the oldest max(p_limit, 1000) aged tasks of those groups that are behind
-- the head (run_at, id order across the groups, rows held elsewhere skipped): they go to the
-- front, FIFO (id order) among themselves. Returns how many tasks were moved. Never waits for a
-- lock.
-- Why a gap and a thousand at once: moving only a batch per claim would send every claim of an old
-- backlog down the full path, at several times a young backlog's cost (BENCHMARKS.md, "the aging
-- cliff"); with the gap, the claims between two sweeps take the fast path, and the sweep costs one
-- statement per gap.
CREATE OR REPLACE FUNCTION queue_age(
    p_queue text, p_groups text[], p_limit integer, p_aging_secs double precision, p_now timestamptz
) RETURNS integer
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
    v_cut timestamptz := p_now - make_interval(secs => p_aging_secs);
    v_gap interval := make_interval(secs => least(p_aging_secs / 10, 1));
    v_take integer := greatest(p_limit, 1000);
    v_head double precision;
    v_groups text[];
    v_due boolean;
    v_moved integer;
BEGIN
    SELECT t.vtag INTO v_head FROM queue_tasks t
     WHERE t.queue = p_queue AND t.status = 'pending' AND t.vtag IS NOT NULL AND t.run_at <= p_now
       AND t.priority_group = ANY (p_groups)
     ORDER BY t.vtag, t.id LIMIT 1;
    IF v_head IS NULL THEN
        RETURN 0;
    END IF;
    -- Is a listed group due (not swept within the gap, its oldest aged task behind the head)?
    IF NOT EXISTS (
        SELECT 1 FROM queue_group_weights w
         CROSS JOIN LATERAL (SELECT a.vtag FROM queue_tasks a
                              WHERE a.queue = p_queue AND a.priority_group = w.priority_group
                                AND a.status = 'pending' AND NOT a.serial_wait AND a.run_at <= v_cut
                              ORDER BY a.run_at, a.id LIMIT 1) h
         WHERE w.queue = p_queue AND w.priority_group = ANY (p_groups)
           AND (w.aging_swept_at IS NULL OR w.aging_swept_at <= p_now - v_gap)
           AND h.vtag > v_head) THEN
        RETURN 0;
    END IF;
    -- Lock the listed groups' rows (skipping rows another claim holds) and read, from the version
    -- locked, whether one is still due: a sweep that committed meanwhile stamped it.
    WITH locked AS (
        SELECT w.priority_group, (w.aging_swept_at IS NULL OR w.aging_swept_at <= p_now - v_gap) AS due
          FROM queue_group_weights w
         WHERE w.queue = p_queue AND w.priority_group = ANY (p_groups)
           FOR NO KEY UPDATE OF w SKIP LOCKED
    )
    SELECT coalesce(array_agg(l.priority_group), '{}'), coalesce(bool_or(l.due), false) INTO v_groups, v_due FROM locked l;
    IF NOT v_due THEN
        RETURN 0;
    END IF;
    UPDATE queue_group_weights w SET aging_swept_at = p_now
     WHERE w.queue = p_queue AND w.priority_group = ANY (v_groups);
    -- Every aged task of the locked groups behind the head, oldest first (FIFO across the groups,
    -- as the tasks waited), not only those of the group that was due.
    UPDATE queue_tasks t SET vtag = v_head
     WHERE t.id IN (SELECT h.id
                      FROM unnest(v_groups) AS g(name)
                     CROSS JOIN LATERAL (
                            SELECT y.id, y.run_at FROM queue_tasks y
                             WHERE y.queue = p_queue AND y.priority_group = g.name
                               AND y.status = 'pending' AND NOT y.serial_wait AND y.run_at <= v_cut AND y.vtag > v_head
                             ORDER BY y.run_at, y.id
                             LIMIT v_take
                               FOR UPDATE SKIP LOCKED) h
                     ORDER BY h.run_at, h.id
                     LIMIT v_take)
       AND t.status = 'pending' AND t.vtag > v_head;
    GET DIAGNOSTICS v_moved = ROW_COUNT;
    RETURN v_moved;
END $$;
