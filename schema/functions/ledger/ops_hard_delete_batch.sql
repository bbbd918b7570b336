-- Hard delete, one batch: removes up to p_limit operations settled (succeeded or failed) more than
-- p_older_than_days days ago, with all their events. Never touches reserved, unknown or review
-- operations. CONSEQUENCE: the ledger forgets these keys; a later Reserve of one of them is a new
-- operation and the write runs AGAIN. p_acknowledge must be the exact text
-- 'forget these keys: a retry will run the write again', so no call deletes by accident.
-- Rows another transaction holds are skipped. Returns one row: deleted, events_deleted.
CREATE OR REPLACE FUNCTION ops_hard_delete_batch(p_older_than_days integer, p_limit integer, p_acknowledge text, p_ctx jsonb)
RETURNS TABLE (deleted integer, events_deleted bigint)
LANGUAGE plpgsql
SET search_path FROM CURRENT
AS $$
DECLARE
    v_cut timestamptz := ledger_now() - make_interval(days => p_older_than_days);
    v_keys text[];
BEGIN
    IF p_acknowledge IS DISTINCT FROM 'forget these keys: a retry will run the write again' THEN
        RAISE EXCEPTION 'hard delete refused: it needs the acknowledgement text (a deleted key that is retried runs its write again)'
            USING ERRCODE = '22023';
    END IF;
    IF p_older_than_days IS NULL OR p_older_than_days < 0 OR p_limit IS NULL OR p_limit < 1 THEN
        RAISE EXCEPTION 'ops_hard_delete_batch needs p_older_than_days >= 0 and p_limit >= 1' USING ERRCODE = '22023';
    END IF;
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
        events_deleted := 0;
        RETURN NEXT;
        RETURN;
    END IF;
    PERFORM set_config('n8n_operation_ledger.retention', 'on', true);
    DELETE FROM operation_events e WHERE e.operation_key = ANY (v_keys);
    GET DIAGNOSTICS events_deleted = ROW_COUNT;
    PERFORM set_config('n8n_operation_ledger.retention', 'off', true);
    RETURN NEXT;
END $$;
