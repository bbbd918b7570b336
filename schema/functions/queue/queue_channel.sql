-- The LISTEN/NOTIFY channel of a queue: 'oplq_' and the first 24 hex digits of
-- md5(schema || '/' || queue). The nodes compute the same name (src/queue/channel.ts).
CREATE OR REPLACE FUNCTION queue_channel(p_queue text) RETURNS text
LANGUAGE sql STABLE
SET search_path FROM CURRENT
AS $$
    SELECT 'oplq_' || left(md5(current_schema() || '/' || p_queue), 24)
$$;
