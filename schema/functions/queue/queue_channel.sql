-- The LISTEN/NOTIFY channel of a queue: 'oplq_' and the first 24 hex digits of
-- md5(schema || '/' || queue). The nodes compute the same name (src/queue/channel.ts).
-- plpgsql, not sql: a SQL-language function with a SET clause (every function gets search_path, see
-- schema/security/function_security.sql) is never inlined, and the statement that calls it plans
-- its body again on every execution (0.02 ms here); plpgsql keeps the plan for the connection.
CREATE OR REPLACE FUNCTION queue_channel(p_queue text) RETURNS text
LANGUAGE plpgsql STABLE
SET search_path FROM CURRENT
AS $$
BEGIN
    RETURN 'oplq_' || left(md5(current_schema() || '/' || p_queue), 24);
END $$;
