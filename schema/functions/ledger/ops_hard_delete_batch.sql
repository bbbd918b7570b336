-- Hard delete, one batch: removes up to p_limit operations settled (succeeded or failed) more than
-- p_older_than_days days ago, with all their events. Never touches reserved, unknown or review
-- operations. CONSEQUENCE: the ledger forgets these keys; a later Reserve of one of them is a new
-- operation and the write runs AGAIN. p_acknowledge must be the exact text
-- 'forget these keys: a retry will run the write again', so no call deletes by accident.
-- Rows another transaction holds are skipped. Returns one row: deleted, events_deleted.
-- p_older_than_days: 1 .. 36500; p_limit: 1 .. 10000 (SQLSTATE 22023 otherwise, as the node).
-- Not granted to the operator role unless chosen (schema/security/operator_role.sql -v hard_delete=1).
CREATE OR REPLACE FUNCTION ops_hard_delete_batch(p_older_than_days integer, p_limit integer, p_acknowledge text, p_ctx jsonb)
RETURNS TABLE (deleted integer, events_deleted bigint)
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
    v_cut timestamptz;
    v_keys text[];
BEGIN
    IF p_acknowledge IS DISTINCT FROM 'forget these keys: a retry will run the write again' THEN
        RAISE EXCEPTION 'hard delete refused: it needs the acknowledgement text (a deleted key that is retried runs its write again)'
            USING ERRCODE = '22023';
    END IF;
    -- The node's bounds (src/ledger/admin/retention.ts, checkRetentionOptions).
    PERFORM ol_check_numbers('older than (days)', NULL, ARRAY[p_older_than_days::double precision], 1, 36500, true),
            ol_check_numbers('the batch size', NULL, ARRAY[p_limit::double precision], 1, 10000, true);
    v_cut := ledger_now() - make_interval(days => p_older_than_days);
    -- The guard on both tables (migration 0012) lets these DELETEs through only with this setting
    -- and current_user the tables' owner: inside this SECURITY DEFINER function, never for a caller.
    PERFORM set_config('n8n_operation_ledger.retention', 'on', true);
    -- No order: hard delete is rare, and "any p_limit eligible rows" stops the scan early instead of
    -- sorting the table (compacted rows are in no settled_at index).
    WITH picked AS (
        SELECT o.operation_key FROM operations o
         WHERE o.status IN ('succeeded', 'failed') AND o.settled_at < v_cut
         LIMIT p_limit
         FOR UPDATE SKIP LOCKED
    ), del AS (
        DELETE FROM operations o USING picked p
         WHERE o.operation_key = p.operation_key
        RETURNING o.operation_key
    )
    SELECT coalesce(array_agg(del.operation_key), '{}'), count(*)::integer INTO v_keys, deleted FROM del;
    IF deleted = 0 THEN
        PERFORM set_config('n8n_operation_ledger.retention', 'off', true);
        events_deleted := 0;
        RETURN NEXT;
        RETURN;
    END IF;
    DELETE FROM operation_events e WHERE e.operation_key = ANY (v_keys);
    GET DIAGNOSTICS events_deleted = ROW_COUNT;
    PERFORM set_config('n8n_operation_ledger.retention', 'off', true);
    RETURN NEXT;
END $$;
