-- Operator look-up: one operation by key, with its event history in order (oldest first).
-- p_max_events: at most this many events, 1 .. 10000 (the newest are kept when there are more;
-- "eventsTotal" says how many exist). Returns NULL when no operation has that key, else
-- {"operation": {...row, without lease and claim tokens...}, "events": [...], "eventsTotal": n}.
-- Each event: eventId, event, fromStatus, toStatus, attempt, executionId, workflowId, nodeName,
-- itemIndex (what the caller said), dbRole (the database role that wrote it; null before migration
-- 0012), detail, at. Timestamps are ISO-8601 text with microseconds (jsonb), bigint event ids are
-- strings. A key or limit the node refuses is refused (SQLSTATE 22023).
CREATE OR REPLACE FUNCTION ops_get_operation(p_key text, p_max_events integer)
RETURNS jsonb
LANGUAGE plpgsql
STABLE
SET search_path FROM CURRENT
-- A plan is kept per connection, and one made while the tables were small (or analysed small)
-- reads them sequentially for as long as the connection lives, even for a primary-key lookup:
-- sequential scans are priced out (docs/schema.md, "Plans kept from a small table"). JIT is off: a statement whose
-- only path is a scan would carry the priced-out cost and be compiled on every call.
SET enable_seqscan = off
SET jit = off
AS $$
BEGIN
    PERFORM ol_check_texts('the operation key', NULL, ARRAY[p_key], 'operation_key', 512),
            ol_check_numbers('max events', NULL, ARRAY[p_max_events::double precision], 1, 10000, true);
    RETURN (
    SELECT jsonb_build_object(
        'operation', to_jsonb(o) - 'lease_token_hash' - 'claim_token_hash',
        'eventsTotal', (SELECT count(*) FROM operation_events e WHERE e.operation_key = o.operation_key),
        'events', coalesce((
            SELECT jsonb_agg(jsonb_build_object(
                       'eventId', x.event_id::text, 'event', x.event, 'fromStatus', x.from_status,
                       'toStatus', x.to_status, 'attempt', x.attempt, 'executionId', x.execution_id,
                       'workflowId', x.workflow_id, 'nodeName', x.node_name, 'itemIndex', x.item_index,
                       'dbRole', x.db_role, 'detail', x.detail, 'at', x.created_at) ORDER BY x.event_id)
              FROM (SELECT * FROM operation_events e WHERE e.operation_key = o.operation_key
                     ORDER BY e.event_id DESC LIMIT p_max_events) x), '[]'::jsonb))
      FROM operations o
     WHERE o.operation_key = p_key);
END $$;
