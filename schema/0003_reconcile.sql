-- n8n-nodes-operation-ledger, migration 0003: Reconcile Unknown.
--
-- Apply by hand after 0001 and 0002:
--   psql -1 -v ON_ERROR_STOP=1 -v schema=operation_ledger -f schema/0003_reconcile.sql
--
-- Reconciling never guesses. A reconciler claims operations whose outcome is unknown (or whose
-- reservation lease expired without a confirmation) once they have been unknown for longer than
-- a settle delay, asks the target system, and reports one of:
--   happened      -> succeeded (with the target's reference)
--   not_happened  -> failed, retryable (trusted only because the claim waited out the settle delay)
--   still_unknown -> unknown again, next check after a capped exponential backoff;
--                    after max_checks checks -> review (a human decides; never deleted)
-- A claim is short (claim_seconds) and carries its own token, so two reconcilers running at once
-- never check the same operation, and a reconciler whose claim lapsed cannot resolve it.

SET search_path TO :"schema";

CREATE INDEX operations_unknown_since_idx ON operations (unknown_since) WHERE status = 'unknown';

-- Claim up to p_limit operations, oldest first. p_settle_seconds: how long an operation must have
-- been unknown (or its lease expired) before it is checked. p_claim_seconds: how long this claim
-- keeps other reconcilers away. p_target: only operations for this target (NULL: all).
CREATE FUNCTION reconcile_claim(
    p_limit integer, p_settle_seconds integer, p_claim_seconds integer, p_target text, p_ctx jsonb
)
RETURNS TABLE (
    operation_key text, target text, idempotency_key text, request jsonb, attempt integer,
    reason text, unknown_since timestamptz, reconcile_checks integer, claim_token uuid,
    claim_expires_at timestamptz
)
LANGUAGE plpgsql
SET search_path FROM CURRENT
AS $$
DECLARE
    v_settle interval := make_interval(secs => p_settle_seconds);
    v_token uuid := gen_random_uuid();
    r record;
BEGIN
    -- 1. Leases that expired without a confirmation become unknown (as Reserve would do).
    FOR r IN
        WITH expired AS (
            SELECT o.operation_key FROM operations o
             WHERE o.status = 'reserved' AND o.lease_expires_at <= now() - v_settle
               AND (p_target IS NULL OR o.target = p_target)
             ORDER BY o.lease_expires_at
             LIMIT p_limit
             FOR UPDATE SKIP LOCKED
        )
        UPDATE operations o
           SET status = 'unknown', reason = 'lease expired without a confirmation',
               unknown_since = o.lease_expires_at, next_check_at = now(), updated_at = now()
          FROM expired e
         WHERE o.operation_key = e.operation_key
        RETURNING o.operation_key, o.attempt, o.lease_token
    LOOP
        PERFORM append_event(r.operation_key, 'lease_expired', 'reserved', 'unknown', r.attempt, r.lease_token, p_ctx, NULL, NULL);
    END LOOP;

    -- 2. Claim due unknown operations, oldest first, skipping rows another reconciler holds.
    RETURN QUERY
    WITH due AS (
        SELECT o.operation_key FROM operations o
         WHERE o.status = 'unknown'
           AND o.unknown_since <= now() - v_settle
           AND coalesce(o.next_check_at, '-infinity') <= now()
           AND (o.claim_expires_at IS NULL OR o.claim_expires_at <= now())
           AND (p_target IS NULL OR o.target = p_target)
         ORDER BY o.unknown_since, o.operation_key
         LIMIT p_limit
         FOR UPDATE SKIP LOCKED
    )
    UPDATE operations o
       SET claim_token = v_token, claim_expires_at = now() + make_interval(secs => p_claim_seconds)
      FROM due d
     WHERE o.operation_key = d.operation_key
    RETURNING o.operation_key, o.target, o.idempotency_key, o.request, o.attempt, o.reason,
              o.unknown_since, o.reconcile_checks, o.claim_token, o.claim_expires_at;
END $$;

-- Resolve claimed operations. p_items: [{"i": item index, "k": operation key, "claim": claim token,
-- "r": "happened" | "not_happened" | "still_unknown", "ref": reference, "resp": response json,
-- "reason": text}]. p_max_checks: after this many checks an operation goes to review.
-- Backoff before the next check: least(p_backoff_max, p_backoff_base * 2^(checks - 1)) seconds.
-- Results: succeeded | failed | unknown | review | claim_lost (the claim lapsed or the operation
-- was settled meanwhile, e.g. by a late Confirm; nothing changed) | not_found.
CREATE FUNCTION reconcile_resolve(
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
BEGIN
    FOR it IN
        SELECT (e->>'i')::integer AS i, e->>'k' AS k, (e->>'claim')::uuid AS claim, e->>'r' AS r,
               e->>'ref' AS ref, e->'resp' AS resp, e->>'reason' AS reason
        FROM jsonb_array_elements(p_items) AS e
        ORDER BY e->>'k', (e->>'i')::integer
    LOOP
        idx := it.i;
        SELECT * INTO op FROM operations o WHERE o.operation_key = it.k FOR UPDATE;
        IF NOT FOUND THEN
            result := 'not_found'; status := NULL; attempt := NULL; external_ref := NULL;
            reconcile_checks := NULL; next_check_at := NULL;
            RETURN NEXT;
            CONTINUE;
        END IF;
        IF op.status <> 'unknown' OR op.claim_token IS DISTINCT FROM it.claim OR op.claim_expires_at <= now() THEN
            PERFORM append_event(op.operation_key, 'reconcile_claim_lost', op.status, op.status, op.attempt, NULL, p_ctx, it.i,
                                 jsonb_build_object('reported', it.r, 'externalRef', it.ref));
            result := 'claim_lost';
        ELSIF it.r = 'happened' THEN
            UPDATE operations o
               SET status = 'succeeded', external_ref = it.ref, response = it.resp, reason = NULL,
                   reconcile_checks = o.reconcile_checks + 1, claim_token = NULL, claim_expires_at = NULL,
                   next_check_at = NULL, settled_at = now(), updated_at = now()
             WHERE o.operation_key = op.operation_key
            RETURNING o.* INTO op;
            PERFORM append_event(op.operation_key, 'reconciled_succeeded', 'unknown', 'succeeded', op.attempt, NULL, p_ctx, it.i,
                                 jsonb_build_object('externalRef', it.ref));
            result := 'succeeded';
        ELSIF it.r = 'not_happened' THEN
            UPDATE operations o
               SET status = 'failed', retryable = true,
                   reason = coalesce(it.reason, 'reconciled: the target has no record of this write'),
                   reconcile_checks = o.reconcile_checks + 1, claim_token = NULL, claim_expires_at = NULL,
                   next_check_at = NULL, settled_at = now(), updated_at = now()
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
                       claim_token = NULL, claim_expires_at = NULL, next_check_at = NULL, updated_at = now()
                 WHERE o.operation_key = op.operation_key
                RETURNING o.* INTO op;
                PERFORM append_event(op.operation_key, 'review_required', 'unknown', 'review', op.attempt, NULL, p_ctx, it.i,
                                     jsonb_build_object('checks', v_checks, 'reason', it.reason));
                result := 'review';
            ELSE
                UPDATE operations o
                   SET reconcile_checks = v_checks, reason = coalesce(it.reason, o.reason),
                       claim_token = NULL, claim_expires_at = NULL, updated_at = now(),
                       next_check_at = now() + make_interval(secs => least(p_backoff_max_seconds,
                                           p_backoff_base_seconds * power(2, v_checks - 1)))
                 WHERE o.operation_key = op.operation_key
                RETURNING o.* INTO op;
                PERFORM append_event(op.operation_key, 'reconcile_still_unknown', 'unknown', 'unknown', op.attempt, NULL, p_ctx, it.i,
                                     jsonb_build_object('checks', v_checks, 'nextCheckAt', op.next_check_at, 'reason', it.reason));
                result := 'unknown';
            END IF;
        END IF;
        status := op.status;
        attempt := op.attempt;
        external_ref := op.external_ref;
        reconcile_checks := op.reconcile_checks;
        next_check_at := op.next_check_at;
        RETURN NEXT;
    END LOOP;
END $$;

INSERT INTO schema_migrations (version, name) VALUES (3, 'reconcile') ON CONFLICT (version) DO NOTHING;
