-- Claim up to p_limit operations, oldest first. An operation is due once its own settle window has
-- ended (settle_until, set when it became unknown; see migration 0005) plus p_settle_seconds, an
-- optional extra delay of this reconciler (0 by default). p_claim_seconds: how long this claim keeps
-- other reconcilers away. p_target: only operations for this target (NULL: all).
-- The claim token is returned once; the row keeps its hash (ledger_token_hash) and claimed_at,
-- which reconcile_resolve() compares with settle_until.
-- Refused (SQLSTATE 22023, nothing claimed), as the node refuses it (src/ledger/reconcile/claim.ts): a
-- limit outside 1 .. 1000, an extra settle delay outside 0 .. 2592000 or a claim outside 1 .. 86400
-- whole seconds, a target outside the rules of key-like text. Row locks are never waited for
-- (SKIP LOCKED).
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
-- A plan is kept per connection, and one made while the tables were small (or analysed small)
-- reads them sequentially for as long as the connection lives, even for a primary-key lookup:
-- sequential scans are priced out (docs/schema.md, "Plans kept from a small table"). JIT is off: a statement whose
-- only path is a scan would carry the priced-out cost and be compiled on every call.
SET enable_seqscan = off
SET jit = off
-- Both claims read their index in order and stop at the batch (operations_reserved_lease_idx,
-- operations_unknown_since_idx, then an incremental sort by key within equal times): a plan kept
-- from small tables instead fetched every due row and sorted them all (21,000 rows for a
-- batch of 100). Full sorts are priced out.
SET enable_sort = off
AS $$
DECLARE
    v_now timestamptz := ledger_now();
    v_extra interval := make_interval(secs => p_settle_seconds);
    v_token uuid := gen_random_uuid();
    r record;
BEGIN
    PERFORM ol_check_numbers('the batch size', NULL, ARRAY[p_limit::double precision], 1, 1000, true),
            ol_check_numbers('the extra settle delay (seconds)', NULL, ARRAY[p_settle_seconds::double precision], 0, 2592000, true),
            ol_check_numbers('the claim duration (seconds)', NULL, ARRAY[p_claim_seconds::double precision], 1, 86400, true),
            ol_check_texts('the target', NULL, ARRAY[p_target], 'target', 200);
    -- 1. Leases that expired without a confirmation become unknown (ledger_expire_lease, as Reserve
    --    would do); their settle window runs from the end of the lease.
    FOR r IN
        SELECT o.operation_key FROM operations o
         WHERE o.status = 'reserved' AND o.lease_expires_at <= v_now
           AND (p_target IS NULL OR o.target = p_target)
         ORDER BY o.lease_expires_at
         LIMIT p_limit
         FOR UPDATE SKIP LOCKED
    LOOP
        PERFORM ledger_expire_lease(r.operation_key, v_now, p_ctx, NULL);
    END LOOP;

    -- 2. Claim due unknown operations, oldest first, skipping rows another reconciler holds.
    RETURN QUERY
    WITH due AS (
        SELECT o.operation_key FROM operations o
         WHERE o.status = 'unknown'
           AND coalesce(o.settle_until, o.unknown_since + make_interval(secs => o.settle_seconds)) + v_extra <= v_now
           AND o.unknown_since <= v_now - v_extra
           AND coalesce(o.next_check_at, '-infinity') <= v_now
           AND (o.claim_expires_at IS NULL OR o.claim_expires_at <= v_now)
           AND (p_target IS NULL OR o.target = p_target)
         ORDER BY o.unknown_since, o.operation_key
         LIMIT p_limit
         FOR UPDATE SKIP LOCKED
    )
    UPDATE operations o
       SET claim_token_hash = ledger_token_hash(v_token), claimed_at = v_now,
           claim_expires_at = v_now + make_interval(secs => p_claim_seconds)
      FROM due d
     WHERE o.operation_key = d.operation_key
    RETURNING o.operation_key, o.target, o.idempotency_key, o.request, o.attempt, o.reason,
              o.unknown_since, o.reconcile_checks, v_token, o.claim_expires_at;
END $$;
