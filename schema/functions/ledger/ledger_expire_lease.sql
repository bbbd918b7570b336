-- The one lease-expiry transition: reserved --lease expired--> unknown. Called by
-- reserve_operations (a new Reserve finds the key's lease ended), reconcile_claim (its sweep of
-- ended leases) and confirm_operations (the holder reports "unknown" after its lease ended), so the
-- row and the event log come out the same whichever of them sees the expiry first.
--   unknown_since = lease_expires_at: the ledger stopped knowing when the lease ended (the holder
--                   may have written at any moment up to then), not when somebody noticed.
--   settle_until  = lease_expires_at + settle_seconds: the settle window runs from the same moment.
--   next_check_at = p_now, updated_at = p_now; reason 'lease expired without a confirmation';
--   event 'lease_expired' (reserved -> unknown) with detail {"settleUntil": settle_until}, the
--   lease's token hash, p_ctx and item index p_item (NULL when no input item caused it).
-- p_now: the caller's ledger_now(). Changes the row only if it is still reserved and its lease
-- ended at or before p_now; the caller must hold the row lock (FOR UPDATE). Returns the row after
-- the change, or a row of NULLs when nothing changed (check operation_key IS NULL).
-- Internal (SECURITY INVOKER, no EXECUTE for the nodes' role; schema/security/function_security.sql).
CREATE OR REPLACE FUNCTION ledger_expire_lease(p_key text, p_now timestamptz, p_ctx jsonb, p_item integer)
RETURNS operations
LANGUAGE plpgsql
-- Its own planner settings, whichever function first plans it on a connection (docs/schema.md,
-- "Plans kept from a small table"): sequential scans priced out, and JIT off with them.
SET enable_seqscan = off
SET jit = off
AS $$
DECLARE
    op operations%ROWTYPE;
BEGIN
    UPDATE operations o
       SET status = 'unknown', reason = 'lease expired without a confirmation',
           unknown_since = o.lease_expires_at,
           settle_until = o.lease_expires_at + make_interval(secs => o.settle_seconds),
           next_check_at = p_now, updated_at = p_now
     -- status || '': the primary key is the only index this can use (see confirm_operations: a plan
     -- made on a small table may otherwise read operations_reserved_lease_idx, every expired
     -- reserved row, for one key).
     WHERE o.operation_key = p_key AND o.status || '' = 'reserved' AND o.lease_expires_at <= p_now
    RETURNING o.* INTO op;
    IF FOUND THEN
        PERFORM append_event(op.operation_key, 'lease_expired', 'reserved', 'unknown', op.attempt, op.lease_token_hash,
                             p_ctx, p_item, jsonb_build_object('settleUntil', op.settle_until));
    END IF;
    RETURN op;
END $$;
