-- n8n-nodes-operation-ledger, migration 0001: the operation ledger's tables, operations (one row
-- per operation key, the business intent) and operation_events (its history, appended to by the
-- functions only).
--
-- Applied once, in order, by the nodes' migrator (when the credential allows it) or by
-- schema/apply.sql with psql (see the README, "Applying the schema"). Later migrations add
-- columns and constraints to these tables; the functions that change them are in
-- schema/functions/ledger/, one per file.
--
-- State machine. Each arrow is one guarded statement of the function named on it, and appends an
-- event. Times come from ledger_now() (the database clock; schema/functions/ledger/ledger_now.sql).
--
--   (no row) --reserve--------------------------------> reserved  (attempt 1, lease, lease token)
--   reserved --confirm succeeded (lease token)---------> succeeded (external reference, response)
--   reserved --confirm failed (lease token)------------> failed    (reason, retryable or not)
--   reserved --confirm unknown (lease token)-----------> unknown   (its settle window starts)
--   reserved --confirm succeeded, another execution----> review    (flagged possible duplicate)
--   reserved --confirm failed/unknown, other execution-> unknown
--   reserved --lease ended (ledger_expire_lease)-------> unknown   (never re-reserved silently)
--   failed(retryable) --reserve------------------------> reserved  (attempt + 1, new downstream key)
--   unknown --late confirm from the same lease token---> succeeded | failed (evidence, flagged late)
--   unknown --reconcile_resolve: happened--------------> succeeded
--   unknown --reconcile_resolve: did not happen--------> failed, retryable (after the settle window)
--   unknown --reconcile_resolve: still unknown x N-----> review    (for a person)
--   unknown | review --ops_settle_by_hand: happened----> succeeded (a named person, a reference)
--   unknown | review --ops_settle_by_hand: not happened> failed, retryable (after the settle window,
--                                                        or with an explicit override)
--
-- Settled rows stay: retention (ops_compact_batch) drops old bodies and events but keeps the key
-- and its outcome, so a late retry is still answered; only ops_hard_delete_batch, an explicit and
-- acknowledged operator choice, removes operations (docs/operations.md, "Retention").

CREATE SCHEMA IF NOT EXISTS :"schema";
SET search_path TO :"schema";

CREATE TABLE IF NOT EXISTS ol_schema_migrations (
    version     integer PRIMARY KEY,
    name        text NOT NULL,
    applied_at  timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE operations (
    operation_key       text PRIMARY KEY CHECK (octet_length(operation_key) BETWEEN 1 AND 512),
    status              text NOT NULL CHECK (status IN ('reserved', 'succeeded', 'failed', 'unknown', 'review')),
    -- SHA-256 over the RFC 8785 canonical JSON of the request, computed by the node (hex).
    fingerprint         text NOT NULL,
    fingerprint_alg     text NOT NULL,
    target              text,
    request             jsonb,
    attempt             integer NOT NULL DEFAULT 1 CHECK (attempt >= 1),
    -- Sent to the outside system as Idempotency-Key; new for each attempt.
    idempotency_key     text NOT NULL,
    lease_token         uuid,
    lease_expires_at    timestamptz,
    external_ref        text,
    response            jsonb,
    response_truncated  boolean NOT NULL DEFAULT false,
    reason              text,
    retryable           boolean,
    unknown_since       timestamptz,
    reconcile_checks    integer NOT NULL DEFAULT 0,
    next_check_at       timestamptz,
    claim_token         uuid,
    claim_expires_at    timestamptz,
    created_at          timestamptz NOT NULL DEFAULT now(),
    updated_at          timestamptz NOT NULL DEFAULT now(),
    settled_at          timestamptz
);

-- What the reconciler scans: unknown rows by when they are next due, expired leases by expiry.
CREATE INDEX operations_unknown_due_idx ON operations (next_check_at) WHERE status = 'unknown';
CREATE INDEX operations_reserved_lease_idx ON operations (lease_expires_at) WHERE status = 'reserved';
CREATE INDEX operations_review_idx ON operations (updated_at) WHERE status = 'review';

CREATE TABLE operation_events (
    event_id        bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    operation_key   text NOT NULL,
    event           text NOT NULL,
    from_status     text,
    to_status       text,
    attempt         integer,
    lease_token     uuid,
    execution_id    text,
    workflow_id     text,
    node_name       text,
    item_index      integer,
    detail          jsonb,
    created_at      timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX operation_events_key_idx ON operation_events (operation_key, event_id);

-- The event log is append-only.
CREATE FUNCTION operation_events_append_only() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'operation_events is append-only (% refused)', TG_OP;
END $$;
CREATE TRIGGER operation_events_no_update_delete
    BEFORE UPDATE OR DELETE ON operation_events
    FOR EACH ROW EXECUTE FUNCTION operation_events_append_only();

INSERT INTO ol_schema_migrations (version, name) VALUES (1, 'ledger') ON CONFLICT (version) DO NOTHING;
