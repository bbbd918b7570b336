-- Settle by hand: a named person decides an operation whose outcome is unknown or in review.
-- p_items: [{"i": item index, "k": operation key, "d": "happened" | "not_happened",
-- "ref": the target's reference (required for happened), "reason": why (required),
-- "by": who decides (required), "early": true to decide "not_happened" before the operation's
-- settle window ends (an override, recorded as such)}]. p_ctx: {"executionId", "workflowId", "nodeName"}.
--   happened      -> succeeded with the reference: the next Reserve answers Already Succeeded.
--   not_happened  -> failed, retryable: the next Reserve may proceed (attempt + 1).
-- Only from unknown or review. The first decision wins: the conditional UPDATE re-checks the
-- status on the row it locks, so of two people deciding at once exactly one changes the row.
-- The settle window (migration 0005): "not_happened" while ledger_now() is before the operation's
-- settle_until is refused (result refused_early, event settle_by_hand_refused_early), exactly as
-- reconcile_resolve refuses it from a claim made too early: the write may still be landing at the
-- target, and a Reserve that proceeded now would send it a second time. With "early": true it is
-- accepted, and the event records the override ("beforeSettleWindowEnd": true, "settleUntil").
-- "happened" brings evidence (the reference) and is accepted at any time.
-- Results: settled (this call decided) | refused (the row is not unknown or review any more;
-- decided_by / decided_at / status say who or what settled it; the attempt is recorded as an
-- event) | refused_early (the window is still running; settle_until says until when; nothing
-- changed but the event) | not_found. Items are handled in key order (no deadlocks between
-- concurrent calls). Times come from ledger_now(); a reconciler's claim on the row is released
-- (its Resolve then gets claim_lost).
-- Every event carries the database role that wrote it (operation_events.db_role, migration 0012):
-- "by" is what the caller says, db_role is what the database knows.
-- Refused for the whole batch (SQLSTATE 22023, nothing written), as the node refuses it
-- (src/ledger/admin/settle.ts, prepareSettleItem): a key outside the node's rules, a decision other than
-- the two, no person (at most 200 characters), no reason (at most 2000), happened without a
-- reference (at most 1000).
-- Lock waits: one budget for the batch (ol_lock_deadline); a row held past it fails the batch
-- (SQLSTATE 55P03, nothing recorded) within about one lock_timeout.
CREATE OR REPLACE FUNCTION ops_settle_by_hand(p_items jsonb, p_ctx jsonb)
RETURNS TABLE (
    idx integer, result text, status text, attempt integer, external_ref text, retryable boolean,
    decided_by text, decided_at timestamptz, decision text, settle_until timestamptz
)
LANGUAGE plpgsql
SET search_path FROM CURRENT
-- A plan is kept per connection, and one made while the tables were small (or analysed small)
-- reads them sequentially for as long as the connection lives, even for a primary-key lookup:
-- sequential scans are priced out (docs/schema.md, "Plans kept from a small table"). JIT is off: a statement whose
-- only path is a scan would carry the priced-out cost and be compiled on every call.
SET enable_seqscan = off
SET jit = off
AS $$
DECLARE
    it record;
    op operations%ROWTYPE;
    v_from text;
    v_until timestamptz;
    v_ev_event text;
    v_ev_node text;
    v_ev_exec text;
    v_ev_decision text;
    v_now timestamptz := ledger_now();
    v_lock_timeout text := current_setting('lock_timeout');
    v_deadline timestamptz := ol_lock_deadline();
BEGIN
    PERFORM ol_check_texts('the operation key', x.i, x.k, 'operation_key', 512),
            ol_check_texts('the external reference', x.i, x.ref, 'text', 1000),
            ol_check_texts('the reason', x.i, x.why, 'required_text', 2000),
            ol_check_texts('"decided by"', x.i, x.who, 'required_text', 200)
      FROM (SELECT array_agg((e->>'i')::integer) AS i, array_agg(e->>'k') AS k, array_agg(e->>'ref') AS ref,
                   array_agg(e->>'reason') AS why, array_agg(e->>'by') AS who
              FROM jsonb_array_elements(p_items) AS e) x;
    FOR it IN
        SELECT (e->>'i')::integer AS i, e->>'k' AS k, e->>'d' AS d, e->>'ref' AS ref,
               e->>'reason' AS reason, e->>'by' AS who, coalesce((e->>'early')::boolean, false) AS early
        FROM jsonb_array_elements(p_items) AS e
        ORDER BY e->>'k', (e->>'i')::integer
    LOOP
        idx := it.i;
        settle_until := NULL;
        IF it.d IS NULL OR it.d NOT IN ('happened', 'not_happened') OR (it.d = 'happened' AND coalesce(it.ref, '') = '') THEN
            RAISE EXCEPTION 'item %: a decision needs happened|not_happened, who, a reason, and for happened a reference', it.i
                USING ERRCODE = '22023';
        END IF;
        PERFORM ol_lock_budget(v_deadline);
        SELECT o.status, coalesce(o.settle_until, o.unknown_since + make_interval(secs => o.settle_seconds))
          INTO v_from, v_until
          FROM operations o WHERE o.operation_key = it.k FOR UPDATE;
        IF NOT FOUND THEN
            result := 'not_found'; status := NULL; attempt := NULL; external_ref := NULL; retryable := NULL;
            decided_by := NULL; decided_at := NULL; decision := NULL;
            RETURN NEXT;
            CONTINUE;
        END IF;
        IF it.d = 'not_happened' AND NOT it.early AND v_from IN ('unknown', 'review') AND v_now < v_until THEN
            SELECT * INTO op FROM operations o WHERE o.operation_key = it.k;
            PERFORM append_event(op.operation_key, 'settle_by_hand_refused_early', op.status, op.status, op.attempt, NULL, p_ctx, it.i,
                                 jsonb_build_object('decision', it.d, 'decidedBy', it.who, 'reason', it.reason, 'settleUntil', v_until));
            result := 'refused_early'; status := op.status; attempt := op.attempt; external_ref := op.external_ref;
            retryable := op.retryable; decided_by := NULL; decided_at := NULL; decision := NULL; settle_until := v_until;
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
                                                    'externalRef', it.ref)
                                 || CASE WHEN it.d = 'not_happened' AND v_now < v_until
                                         THEN jsonb_build_object('beforeSettleWindowEnd', true, 'settleUntil', v_until)
                                         ELSE '{}'::jsonb END);
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
    PERFORM set_config('lock_timeout', v_lock_timeout, true);
END $$;
