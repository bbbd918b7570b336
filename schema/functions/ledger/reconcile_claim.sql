-- Claim up to p_limit operations, oldest first. p_settle_seconds: how long an operation must have
-- been unknown (or its lease expired) before it is checked. p_claim_seconds: how long this claim
-- keeps other reconcilers away. p_target: only operations for this target (NULL: all).
CREATE OR REPLACE FUNCTION reconcile_claim(
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
