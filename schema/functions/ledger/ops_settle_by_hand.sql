-- Settle by hand: a named person decides an operation whose outcome is unknown or in review.
-- p_items: [{"i": item index, "k": operation key, "d": "happened" | "not_happened",
-- "ref": the target's reference (required for happened), "reason": why (required),
-- "by": who decides (required)}]. p_ctx: {"executionId", "workflowId", "nodeName"}.
--   happened      -> succeeded with the reference: the next Reserve answers Already Succeeded.
--   not_happened  -> failed, retryable: the next Reserve may proceed (attempt + 1).
-- Only from unknown or review. The first decision wins: the conditional UPDATE re-checks the
-- status on the row it locks, so of two people deciding at once exactly one changes the row.
-- Results: settled (this call decided) | refused (the row is not unknown or review any more;
-- decided_by / decided_at / status say who or what settled it; the attempt is recorded as an
-- event) | not_found. Items are handled in key order (no deadlocks between concurrent calls).
-- Times come from ledger_now(); a reconciler's claim on the row is released (its Resolve then gets
-- claim_lost).
CREATE OR REPLACE FUNCTION ops_settle_by_hand(p_items jsonb, p_ctx jsonb)
RETURNS TABLE (
    idx integer, result text, status text, attempt integer, external_ref text, retryable boolean,
    decided_by text, decided_at timestamptz, decision text
)
LANGUAGE plpgsql
SET search_path FROM CURRENT
AS $$
DECLARE
    it record;
    op operations%ROWTYPE;
    v_from text;
    v_ev_event text;
    v_ev_node text;
    v_ev_exec text;
    v_ev_decision text;
    v_now timestamptz := ledger_now();
BEGIN
    FOR it IN
        SELECT (e->>'i')::integer AS i, e->>'k' AS k, e->>'d' AS d, e->>'ref' AS ref,
               e->>'reason' AS reason, e->>'by' AS who
        FROM jsonb_array_elements(p_items) AS e
        ORDER BY e->>'k', (e->>'i')::integer
    LOOP
        idx := it.i;
        IF it.d NOT IN ('happened', 'not_happened') OR coalesce(it.who, '') = '' OR coalesce(it.reason, '') = ''
           OR (it.d = 'happened' AND coalesce(it.ref, '') = '') THEN
            RAISE EXCEPTION 'item %: a decision needs happened|not_happened, who, a reason, and for happened a reference', it.i
                USING ERRCODE = '22023';
        END IF;
        SELECT o.status INTO v_from FROM operations o WHERE o.operation_key = it.k FOR UPDATE;
        IF NOT FOUND THEN
            result := 'not_found'; status := NULL; attempt := NULL; external_ref := NULL; retryable := NULL;
            decided_by := NULL; decided_at := NULL; decision := NULL;
            RETURN NEXT;
            CONTINUE;
        END IF;
        UPDATE operations o
           SET status = CASE WHEN it.d = 'happened' THEN 'succeeded' ELSE 'failed' END,
               external_ref = CASE WHEN it.d = 'happened' THEN it.ref ELSE o.external_ref END,
               retryable = CASE WHEN it.d = 'happened' THEN NULL ELSE true END,
               reason = CASE WHEN it.d = 'happened' THEN NULL ELSE 'settled by hand: ' || it.reason END,
               next_check_at = NULL, claim_token_hash = NULL, claim_expires_at = NULL, claimed_at = NULL,
               settled_by = it.who, settled_by_attempt = o.attempt,
               settled_at = v_now, updated_at = v_now
         WHERE o.operation_key = it.k AND o.status IN ('unknown', 'review')
        RETURNING o.* INTO op;
        IF FOUND THEN
            PERFORM append_event(op.operation_key, 'settled_by_hand', v_from, op.status, op.attempt, NULL, p_ctx, it.i,
                                 jsonb_build_object('decision', it.d, 'decidedBy', it.who, 'reason', it.reason,
                                                    'externalRef', it.ref));
            result := 'settled';
            decision := it.d;
            decided_by := op.settled_by;
        ELSE
            SELECT * INTO op FROM operations o WHERE o.operation_key = it.k;
            PERFORM append_event(op.operation_key, 'settle_by_hand_refused', op.status, op.status, op.attempt, NULL, p_ctx, it.i,
                                 jsonb_build_object('decision', it.d, 'decidedBy', it.who, 'reason', it.reason,
                                                    'externalRef', it.ref,
                                                    'settledBy', CASE WHEN op.settled_by_attempt = op.attempt THEN op.settled_by END));
            result := 'refused';
            -- What settled it: the person, else the last event that moved it to its status.
            SELECT e.event, e.node_name, e.execution_id, e.detail->>'decision'
              INTO v_ev_event, v_ev_node, v_ev_exec, v_ev_decision
              FROM operation_events e
             WHERE e.operation_key = op.operation_key AND e.to_status = op.status AND e.from_status IS DISTINCT FROM e.to_status
             ORDER BY e.event_id DESC LIMIT 1;
            decision := CASE WHEN op.settled_by_attempt = op.attempt AND op.status IN ('succeeded', 'failed')
                                  THEN CASE op.status WHEN 'succeeded' THEN 'happened' ELSE 'not_happened' END
                             WHEN v_ev_event = 'settled_by_hand' THEN v_ev_decision
                             ELSE v_ev_event END;
            decided_by := coalesce(CASE WHEN op.settled_by_attempt = op.attempt THEN op.settled_by END,
                                   CASE WHEN op.status IN ('succeeded', 'failed') THEN
                                       coalesce('node "' || v_ev_node || '"', 'a workflow')
                                       || coalesce(' in execution ' || v_ev_exec, '') END);
        END IF;
        -- The row as this call leaves it.
        SELECT op.status, op.attempt, op.external_ref, op.retryable, op.settled_at
          INTO status, attempt, external_ref, retryable, decided_at;
        RETURN NEXT;
    END LOOP;
END $$;
