-- The queue's clock: every time the queue functions compare or store (run_at, leases, backoff,
-- aging, purge ages, the ages stats report, enqueued_at and the other stamps) is read from it,
-- never from now() directly. In production it is the transaction's now(). Where a function needs
-- the time after its own waits (a claim's lease starts after the locks it waited for), it reads
-- queue_now() + (clock_timestamp() - now()): this clock, moved on by the time the transaction has
-- run so far. Tests move the clock by replacing this one function in their own schema (CREATE OR
-- REPLACE ... now() + interval '...', test/helpers/db.ts setQueueClock), which needs the schema
-- owner's rights: the nodes' role cannot shift it.
-- INLINED (schema/security/function_security.sql): no SET clause, so the planner replaces a call
-- by its body; a comparison with queue_now() is a comparison with now(), which index scans and
-- cached plans take as they took now() (a replaced body invalidates the plans that inlined it).
CREATE OR REPLACE FUNCTION queue_now() RETURNS timestamptz
LANGUAGE sql STABLE PARALLEL SAFE AS $$
    SELECT now()
$$;
