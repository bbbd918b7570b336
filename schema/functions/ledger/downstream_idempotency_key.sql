-- The downstream idempotency key: an RFC 9562 version 8 UUID whose 122 free bits come from
-- SHA-256(operation_key || '#' || attempt). Deterministic, so an operator can recompute it: the
-- first 32 hex digits of the hash with digit 13 set to 8 (the version) and digit 17 to 8 (the
-- variant, binary 10xx), formatted as a UUID.
-- One expression, each argument used once and no SET clause (function_security.sql, INLINED), so
-- that the planner inlines it into reserve_operations' batch insert instead of running a SQL
-- function per row (about 4 µs a key, measured on a 1,000-key reserve). STABLE, not IMMUTABLE:
-- convert_to() is STABLE, and the planner inlines no function declared stricter than its body.
-- (The value depends only on the arguments: convert_to to UTF-8 gives the same bytes for the same
-- characters whatever the server's encoding.)
CREATE OR REPLACE FUNCTION downstream_idempotency_key(p_key text, p_attempt integer) RETURNS text
LANGUAGE sql STABLE STRICT PARALLEL SAFE AS $$
    SELECT left(overlay(overlay(encode(sha256(convert_to(p_key || '#' || p_attempt::text, 'UTF8')), 'hex')
                                placing '8' from 13 for 1) placing '8' from 17 for 1), 32)::uuid::text
$$;
