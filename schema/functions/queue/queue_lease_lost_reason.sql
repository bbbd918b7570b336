-- Why a settle call with lease token p_token did not apply to task t (t as it is now).
CREATE OR REPLACE FUNCTION queue_lease_lost_reason(t queue_tasks, p_token uuid) RETURNS text
LANGUAGE sql STABLE
SET search_path FROM CURRENT
AS $$
    SELECT CASE
        WHEN t.status = 'processing' AND t.lease_token = p_token
            THEN 'the lease expired at ' || t.lease_expires_at::text || '; the task will be handed out again'
        WHEN t.status = 'processing'
            THEN 'the lease was lost: the task is held by another holder now'
        WHEN t.lease_token = p_token
            THEN 'this lease already settled the task (now ' || t.status || ')'
        WHEN t.status = 'dead'
            THEN 'the lease was lost and the task is dead: ' || coalesce(t.last_error, '')
        ELSE 'the lease was lost: the task is ' || t.status || ' again'
    END
$$;
