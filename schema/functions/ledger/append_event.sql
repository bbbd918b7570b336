-- Called only from the functions below, which pin search_path; a SET clause here would cost a
-- configuration change on every event. p_token_hash: ledger_token_hash() of the lease token
-- concerned (never the token itself), or NULL.
CREATE OR REPLACE FUNCTION append_event(
    p_key text, p_event text, p_from text, p_to text, p_attempt integer, p_token_hash bytea,
    p_ctx jsonb, p_item integer, p_detail jsonb
) RETURNS void
LANGUAGE sql
AS $$
    INSERT INTO operation_events (operation_key, event, from_status, to_status, attempt, lease_token_hash,
                                  execution_id, workflow_id, node_name, item_index, detail)
    VALUES (p_key, p_event, p_from, p_to, p_attempt, p_token_hash,
            p_ctx->>'executionId', p_ctx->>'workflowId', p_ctx->>'nodeName', p_item, p_detail)
$$;
