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
-- Refused for the whole batch (SQLSTATE 22023, nothing written), as the node refuses it: a key
-- outside the node's rules, a resolution other than the three, a reference over 1000 or a reason
-- over 2000 characters, max checks outside 1 .. 1000, a backoff base outside 1 .. 86400 or a
-- ceiling outside 1 .. 2592000 whole seconds (src/ledger/reconcile/resolve.ts).
-- Lock waits: one budget for the batch (ol_lock_deadline), so held keys answer busy within about
-- one lock_timeout in all.
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
    v_checks integer;
    v_now timestamptz := ledger_now();
    v_settle timestamptz;
    v_lock_timeout text := current_setting('lock_timeout');
    v_deadline timestamptz := ol_lock_deadline();
BEGIN
    -- What the node refuses is refused here too (docs/security.md, "What a caller can pass").
    PERFORM ol_check_numbers('max checks', NULL, ARRAY[p_max_checks::double precision], 1, 1000, true),
            ol_check_numbers('the backoff base (seconds)', NULL, ARRAY[p_backoff_base_seconds], 1, 86400, true),
            ol_check_numbers('the backoff ceiling (seconds)', NULL, ARRAY[p_backoff_max_seconds], 1, 2592000, true);
    PERFORM ol_check_texts('the operation key', x.i, x.k, 'operation_key', 512),
            ol_check_texts('the external reference', x.i, x.ref, 'text', 1000),
            ol_check_texts('the reason', x.i, x.why, 'text', 2000)
      FROM (SELECT array_agg((e->>'i')::integer) AS i, array_agg(e->>'k') AS k, array_agg(e->>'ref') AS ref,
                   array_agg(e->>'reason') AS why
              FROM jsonb_array_elements(p_items) AS e) x;
    IF EXISTS (SELECT 1 FROM jsonb_array_elements(p_items) AS e
                WHERE coalesce(e->>'r', '') NOT IN ('happened', 'not_happened', 'still_unknown')) THEN
        RAISE EXCEPTION 'reconcile_resolve: every item''s resolution "r" must be happened, not_happened or still_unknown' USING ERRCODE = '22023';
    END IF;
    FOR it IN
        SELECT (e->>'i')::integer AS i, e->>'k' AS k, (e->>'claim')::uuid AS claim, e->>'r' AS r,
               e->>'ref' AS ref, e->'resp' AS resp, e->>'reason' AS reason
        FROM jsonb_array_elements(p_items) AS e
        ORDER BY e->>'k', (e->>'i')::integer
    LOOP
        idx := it.i;
        BEGIN
        PERFORM ol_lock_budget(v_deadline);
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
    PERFORM set_config('lock_timeout', v_lock_timeout, true);
END $$;
