-- A settle call (p_op: 'complete' | 'fail' | 'release' | 'extend') with lease token p_token did not
-- apply to task p_id: read the task as it is now (the hot table, else the archive) and answer with
-- queue_settle_verdict's outcome and detail, plus the task's current fields (null when not found).
-- Read-only.
CREATE OR REPLACE FUNCTION queue_settle_miss(
    p_op text, p_id bigint, p_token uuid,
    OUT outcome text, OUT detail text, OUT status text, OUT attempts integer, OUT max_attempts integer,
    OUT last_error text, OUT run_at timestamptz, OUT finished_at timestamptz
)
LANGUAGE plpgsql STABLE
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
    t queue_tasks%ROWTYPE;
    a queue_tasks_archive%ROWTYPE;
BEGIN
    SELECT * INTO t FROM queue_tasks x WHERE x.id = p_id;
    IF FOUND THEN
        SELECT v.outcome, v.detail INTO outcome, detail
          FROM queue_settle_verdict(p_op, p_token, 'live', t.status, t.lease_token, t.lease_end, t.lease_expires_at,
                                    t.attempts, t.max_attempts, t.dead_reason) v;
        status := t.status; attempts := t.attempts; max_attempts := t.max_attempts; last_error := t.last_error;
        run_at := CASE WHEN t.status = 'pending' THEN t.run_at END;
        finished_at := NULL;
        RETURN;
    END IF;
    SELECT * INTO a FROM queue_tasks_archive x WHERE x.id = p_id;
    IF FOUND THEN
        SELECT v.outcome, v.detail INTO outcome, detail
          FROM queue_settle_verdict(p_op, p_token, 'archive', a.status, a.lease_token, a.lease_end, NULL,
                                    a.attempts, a.max_attempts, a.dead_reason) v;
        status := a.status; attempts := a.attempts; max_attempts := a.max_attempts; last_error := a.last_error;
        finished_at := a.finished_at;
        RETURN;
    END IF;
    SELECT v.outcome, v.detail INTO outcome, detail
      FROM queue_settle_verdict(p_op, p_token, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL) v;
END $$;
