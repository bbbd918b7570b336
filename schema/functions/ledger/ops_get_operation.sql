-- Operator look-up: one operation by key, with its event history in order (oldest first).
-- p_max_events: at most this many events (the newest are kept when there are more; "eventsTotal"
-- says how many exist). Returns NULL when no operation has that key, else
-- {"operation": {...row, without lease and claim tokens...}, "events": [...], "eventsTotal": n}.
-- Timestamps are ISO-8601 text with microseconds (jsonb), bigint event ids are strings.
CREATE OR REPLACE FUNCTION ops_get_operation(p_key text, p_max_events integer)
RETURNS jsonb
LANGUAGE sql
STABLE
SET search_path FROM CURRENT
AS $$
    SELECT jsonb_build_object(
        'operation', to_jsonb(o) - 'lease_token_hash' - 'claim_token_hash',
        'eventsTotal', (SELECT count(*) FROM operation_events e WHERE e.operation_key = o.operation_key),
        'events', coalesce((
            SELECT jsonb_agg(jsonb_build_object(
                       'eventId', x.event_id::text, 'event', x.event, 'fromStatus', x.from_status,
                       'toStatus', x.to_status, 'attempt', x.attempt, 'executionId', x.execution_id,
                       'workflowId', x.workflow_id, 'nodeName', x.node_name, 'itemIndex', x.item_index,
                       'detail', x.detail, 'at', x.created_at) ORDER BY x.event_id)
              FROM (SELECT * FROM operation_events e WHERE e.operation_key = o.operation_key
                     ORDER BY e.event_id DESC LIMIT p_max_events) x), '[]'::jsonb))
      FROM operations o
     WHERE o.operation_key = p_key
$$;
