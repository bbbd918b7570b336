-- The lock-wait budget of one batch (docs/queue.md, "Every wait and its bound"; the credential's
-- Lock Timeout, docs/credentials.md): a function that may wait for several row locks calls this once at its start and
-- ol_lock_budget(deadline) before each further statement that may wait, so that all its waits
-- together last at most about one lock_timeout (the caller's, SET LOCAL by src/db/bounds.ts), not
-- one lock_timeout per key. Returns clock_timestamp() + lock_timeout, or 'infinity' when
-- lock_timeout is 0 (no bound: every wait is then bounded by statement_timeout alone).
CREATE OR REPLACE FUNCTION ol_lock_deadline() RETURNS timestamptz
LANGUAGE plpgsql VOLATILE
AS $$
DECLARE
    v interval := current_setting('lock_timeout')::interval;
BEGIN
    RETURN CASE WHEN v > interval '0' THEN clock_timestamp() + v ELSE 'infinity' END;
END $$;
