-- Retention, one batch: compact up to p_limit operations settled (succeeded or failed) more than
-- p_older_than_days days ago whose current attempt is not compacted yet, oldest settlement first. Rows another
-- transaction holds (a Reserve retrying a failure, a Confirm) are skipped, never waited for.
-- Compaction drops the response body, the request body (kept for retryable failures: a retry
-- needs it for its own reconcile lookup) and the operation's events older than the cutoff. It
-- keeps key, status, fingerprint, attempt, idempotency key, external reference and reason, so a
-- late retry is answered from the ledger: Already Succeeded, or Conflict for another request.
-- Call it repeatedly (each call its own short transaction) until "compacted" < p_limit.
-- Returns one row: compacted (operations), events_deleted, oldest_settled_at (of this batch).
-- p_older_than_days: 1 .. 36500; p_limit: 1 .. 10000 (SQLSTATE 22023 otherwise, as the node).
CREATE OR REPLACE FUNCTION ops_compact_batch(p_older_than_days integer, p_limit integer, p_ctx jsonb)
RETURNS TABLE (compacted integer, events_deleted bigint, oldest_settled_at timestamptz)
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
    -- The node's bounds (src/ledger/admin/retention.ts, checkRetentionOptions).
    PERFORM ol_check_numbers('older than (days)', NULL, ARRAY[p_older_than_days::double precision], 1, 36500, true),
            ol_check_numbers('the batch size', NULL, ARRAY[p_limit::double precision], 1, 10000, true);
    v_cut := ledger_now() - make_interval(days => p_older_than_days);
    WITH picked AS (
        SELECT o.operation_key FROM operations o
         WHERE o.status IN ('succeeded', 'failed') AND o.compacted_attempt IS DISTINCT FROM o.attempt
           AND o.settled_at < v_cut
         ORDER BY o.settled_at
         LIMIT p_limit
         FOR UPDATE SKIP LOCKED
    ), upd AS (
        UPDATE operations o
           SET response = NULL,
               request = CASE WHEN o.status = 'failed' AND o.retryable THEN o.request END,
               compacted_at = ledger_now(), compacted_attempt = o.attempt
          FROM picked p
         WHERE o.operation_key = p.operation_key
        RETURNING o.operation_key, o.settled_at
    )
    SELECT coalesce(array_agg(upd.operation_key), '{}'), count(*)::integer, min(upd.settled_at)
      INTO v_keys, compacted, oldest_settled_at FROM upd;
    IF compacted = 0 THEN
        events_deleted := 0;
        RETURN NEXT;
        RETURN;
    END IF;
    -- The append-only trigger lets this DELETE through, and only DELETEs of this kind: the setting
    -- below and current_user being the table's owner, which it is only inside this SECURITY
    -- DEFINER function (and Hard Delete's), never for a caller (migration 0012).
    PERFORM set_config('n8n_operation_ledger.retention', 'on', true);
    DELETE FROM operation_events e WHERE e.operation_key = ANY (v_keys) AND e.created_at < v_cut;
    GET DIAGNOSTICS events_deleted = ROW_COUNT;
    PERFORM set_config('n8n_operation_ledger.retention', 'off', true);
    RETURN NEXT;
END $$;
