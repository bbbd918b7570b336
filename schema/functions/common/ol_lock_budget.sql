-- Before a statement that may wait for a lock: lock_timeout := what is left of the batch's budget
-- (p_deadline from ol_lock_deadline()), at least 1 ms (0 would mean no bound), transaction-local.
-- Past the deadline every further wait gives up after 1 ms: a key another transaction holds then
-- answers busy (or fails the call) at once, and the keys nobody holds are still decided. The caller
-- puts the original value back before it returns (set_config('lock_timeout', <saved>, true)).
-- Nothing to do for 'infinity' (lock_timeout 0).
CREATE OR REPLACE FUNCTION ol_lock_budget(p_deadline timestamptz) RETURNS void
LANGUAGE plpgsql VOLATILE
AS $$
BEGIN
    IF p_deadline < 'infinity' THEN
        PERFORM set_config('lock_timeout', greatest(1, ceil(extract(epoch FROM p_deadline - clock_timestamp()) * 1000))::bigint::text, true);
    END IF;
END $$;
