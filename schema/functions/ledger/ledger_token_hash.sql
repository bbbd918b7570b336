-- What the ledger stores of a lease or claim token: SHA-256 over the token's 16 bytes. Only the
-- holder knows the token itself (Reserve and Claim return it once); the functions compare hashes.
-- No SET clause (function_security.sql, INLINED): the planner inlines it into the batch statements.
CREATE OR REPLACE FUNCTION ledger_token_hash(p_token uuid) RETURNS bytea
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
    SELECT sha256(uuid_send(p_token))
$$;
