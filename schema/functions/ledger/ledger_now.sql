-- The ledger's clock: every time comparison and every stored deadline in the ledger functions
-- (leases, settle windows, claims, backoff) reads it, never now() directly. In production it is
-- the transaction's now(). Tests move the clock by replacing this one function in their own
-- schema (CREATE OR REPLACE ... now() + interval '...'), which needs the schema owner's rights:
-- the nodes' role cannot shift it.
CREATE OR REPLACE FUNCTION ledger_now() RETURNS timestamptz
LANGUAGE sql STABLE PARALLEL SAFE AS $$
    SELECT now()
$$;
