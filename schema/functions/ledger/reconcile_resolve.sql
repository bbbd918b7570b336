-- Resolve claimed operations. p_items: [{"i": item index, "k": operation key, "claim": claim token,
-- "r": "happened" | "not_happened" | "still_unknown", "ref": reference, "resp": response json,
-- "reason": text}]. p_max_checks: after this many checks an operation goes to review.
-- Backoff before the next check: least(p_backoff_max, p_backoff_base * 2^(checks - 1)) seconds.
-- Results: succeeded | failed | unknown | review | claim_lost (the claim lapsed or the operation
-- was settled meanwhile, e.g. by a late Confirm; nothing changed) | not_found |
-- refused_early ("not_happened" from a claim made before the operation's settle window ended: the
-- write may still have been landing when the lookup ran; the operation stays unknown, the claim is
-- released and it is due again at settle_until) | busy (the row stayed locked for longer than
-- lock_timeout; nothing changed for this item).
-- Claim tokens are compared by ledger_token_hash().
CREATE OR REPLACE FUNCTION reconcile_resolve(
    p_items jsonb, p_max_checks integer, p_backoff_base_seconds double precision,
    p_backoff_max_seconds double precision, p_ctx jsonb
)
RETURNS TABLE (
    idx integer, result text, status text, attempt integer, external_ref text,
    reconcile_checks integer, next_check_at timestamptz
)
LANGUAGE plpgsql
SET search_path FROM CURRENT
AS $$
DECLARE
    it record;
    op operations%ROWTYPE;
    v_checks integer;
    v_now timestamptz := ledger_now();
    v_settle timestamptz;
BEGIN
    FOR it IN
        SELECT (e->>'i')::integer AS i, e->>'k' AS k, (e->>'claim')::uuid AS claim, e->>'r' AS r,
               e->>'ref' AS ref, e->'resp' AS resp, e->>'reason' AS reason
        FROM jsonb_array_elements(p_items) AS e
        ORDER BY e->>'k', (e->>'i')::integer
    LOOP
        idx := it.i;
        BEGIN
        SELECT * INTO op FROM operations o WHERE o.operation_key = it.k FOR UPDATE;
        IF NOT FOUND THEN
            result := 'not_found'; status := NULL; attempt := NULL; external_ref := NULL;
            reconcile_checks := NULL; next_check_at := NULL;
            RETURN NEXT;
            CONTINUE;
        END IF;
        v_settle := coalesce(op.settle_until, op.unknown_since + make_interval(secs => op.settle_seconds));
        IF op.status <> 'unknown' OR op.claim_token_hash IS DISTINCT FROM ledger_token_hash(it.claim) OR op.claim_expires_at <= v_now THEN
            PERFORM append_event(op.operation_key, 'reconcile_claim_lost', op.status, op.status, op.attempt, NULL, p_ctx, it.i,
                                 jsonb_build_object('reported', it.r, 'externalRef', it.ref));
            result := 'claim_lost';
        ELSIF it.r = 'not_happened' AND (op.claimed_at IS NULL OR op.claimed_at < v_settle OR v_now < v_settle) THEN
            PERFORM append_event(op.operation_key, 'reconcile_refused_early', 'unknown', 'unknown', op.attempt, NULL, p_ctx, it.i,
                                 jsonb_build_object('reported', it.r, 'claimedAt', op.claimed_at, 'settleUntil', v_settle,
                                                    'reason', it.reason));
            UPDATE operations o
               SET claim_token_hash = NULL, claim_expires_at = NULL, claimed_at = NULL,
                   next_check_at = greatest(v_settle, v_now), updated_at = v_now
             WHERE o.operation_key = op.operation_key
            RETURNING o.* INTO op;
            result := 'refused_early';
        ELSIF it.r = 'happened' THEN
            UPDATE operations o
               SET status = 'succeeded', external_ref = it.ref, response = it.resp, reason = NULL,
                   reconcile_checks = o.reconcile_checks + 1, claim_token_hash = NULL, claim_expires_at = NULL, claimed_at = NULL,
                   next_check_at = NULL, settled_at = v_now, updated_at = v_now
             WHERE o.operation_key = op.operation_key
            RETURNING o.* INTO op;
            PERFORM append_event(op.operation_key, 'reconciled_succeeded', 'unknown', 'succeeded', op.attempt, NULL, p_ctx, it.i,
                                 jsonb_build_object('externalRef', it.ref));
            result := 'succeeded';
        ELSIF it.r = 'not_happened' THEN
            UPDATE operations o
               SET status = 'failed', retryable = true,
                   reason = coalesce(it.reason, 'reconciled: the target has no record of this write'),
                   reconcile_checks = o.reconcile_checks + 1, claim_token_hash = NULL, claim_expires_at = NULL, claimed_at = NULL,
                   next_check_at = NULL, settled_at = v_now, updated_at = v_now
             WHERE o.operation_key = op.operation_key
            RETURNING o.* INTO op;
            PERFORM append_event(op.operation_key, 'reconciled_failed', 'unknown', 'failed', op.attempt, NULL, p_ctx, it.i,
                                 jsonb_build_object('reason', op.reason, 'retryable', true));
            result := 'failed';
        ELSE
            v_checks := op.reconcile_checks + 1;
            IF v_checks >= p_max_checks THEN
                UPDATE operations o
                   SET status = 'review', reconcile_checks = v_checks,
                       reason = coalesce(it.reason, o.reason),
                       claim_token_hash = NULL, claim_expires_at = NULL, claimed_at = NULL, next_check_at = NULL, updated_at = v_now
                 WHERE o.operation_key = op.operation_key
                RETURNING o.* INTO op;
                PERFORM append_event(op.operation_key, 'review_required', 'unknown', 'review', op.attempt, NULL, p_ctx, it.i,
                                     jsonb_build_object('checks', v_checks, 'reason', it.reason));
                result := 'review';
            ELSE
                UPDATE operations o
                   SET reconcile_checks = v_checks, reason = coalesce(it.reason, o.reason),
                       claim_token_hash = NULL, claim_expires_at = NULL, claimed_at = NULL, updated_at = v_now,
                       next_check_at = v_now + make_interval(secs => least(p_backoff_max_seconds,
                                           p_backoff_base_seconds * power(2, v_checks - 1)))
                 WHERE o.operation_key = op.operation_key
                RETURNING o.* INTO op;
                PERFORM append_event(op.operation_key, 'reconcile_still_unknown', 'unknown', 'unknown', op.attempt, NULL, p_ctx, it.i,
                                     jsonb_build_object('checks', v_checks, 'nextCheckAt', op.next_check_at, 'reason', it.reason));
                result := 'unknown';
            END IF;
        END IF;
        EXCEPTION WHEN lock_not_available THEN
            result := 'busy'; status := NULL; attempt := NULL; external_ref := NULL;
            reconcile_checks := NULL; next_check_at := NULL;
            RETURN NEXT;
            CONTINUE;
        END;
        -- The row as this call leaves it.
        SELECT op.status, op.attempt, op.external_ref, op.reconcile_checks, op.next_check_at
          INTO status, attempt, external_ref, reconcile_checks, next_check_at;
        RETURN NEXT;
    END LOOP;
END $$;
