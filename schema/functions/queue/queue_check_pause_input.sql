-- The input checks queue_pause and queue_resume share, so that a direct SQL call cannot record what
-- the Pause / Resume node would refuse (src/queue/pause.ts, preparePauseInput): p_queue a queue name
-- (required, at most 200 bytes), p_group null (the whole queue) or a priority group name (at most
-- 100 bytes), p_reason at most 2,000 characters and p_by at most 60 (TEXT_LIMITS in src/limits.ts,
-- to which the node cuts them; null is none). p_func names the caller in the message. RAISE 22023
-- (invalid_parameter_value) on the first bad value; reads and changes nothing.
CREATE OR REPLACE FUNCTION queue_check_pause_input(p_func text, p_queue text, p_group text, p_reason text, p_by text)
RETURNS void
LANGUAGE plpgsql STABLE
AS $$
BEGIN
    PERFORM ol_check_texts('queue name', NULL, ARRAY[p_queue], 'name', 200);
    IF p_group IS NOT NULL THEN
        PERFORM ol_check_texts('priority group', NULL, ARRAY[p_group], 'name', 100);
    END IF;
    IF char_length(p_reason) > 2000 OR char_length(p_by) > 60 THEN
        RAISE EXCEPTION '%: a reason of at most 2000 characters and a who of at most 60', p_func USING ERRCODE = '22023';
    END IF;
END $$;
