-- The downstream idempotency key: an RFC 9562 version 8 UUID whose 122 free bits come from
-- SHA-256(operation_key || '#' || attempt). Deterministic, so an operator can recompute it.
CREATE OR REPLACE FUNCTION downstream_idempotency_key(p_key text, p_attempt integer) RETURNS text
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
    SELECT (substr(h, 1, 12) || '8' || substr(h, 14, 3) || '8' || substr(h, 18, 15))::uuid::text
    FROM (SELECT encode(sha256(convert_to(p_key || '#' || p_attempt::text, 'UTF8')), 'hex') AS h) s
$$;
