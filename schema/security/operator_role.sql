-- A least-privilege login role for operators: the "Operation Ledger Admin" node (Get, List,
-- Health, Settle by Hand, Compact). Separate from the nodes' role (least_privilege_role.sql):
-- workflows that reserve and confirm never need to settle by hand or remove anything, and an
-- operator never needs to reserve.
--
-- Run as the schema owner (or a superuser) after applying schema/apply.sql:
--   psql "$ADMIN_URL" -1 -v ON_ERROR_STOP=1 -v schema=operation_ledger -v role=n8n_ledger_operator \
--        -v password="$(openssl rand -base64 24)" -f schema/security/operator_role.sql
-- Point a SEPARATE n8n credential at this role ("Apply Schema Automatically" OFF) and use it only
-- in operator workflows. docs/operations.md lists what each operation needs.
--
-- The functions run with the caller's rights, so the table grants below are what they need.
-- Hard delete is NOT granted here: it is an explicit choice (a deleted key that is retried runs
-- its write again). To allow it, run the two statements at the end by hand.

CREATE ROLE :"role" LOGIN PASSWORD :'password' NOSUPERUSER NOCREATEDB NOCREATEROLE NOINHERIT;

GRANT USAGE ON SCHEMA :"schema" TO :"role";
-- The schema version check every node makes on first use.
GRANT SELECT ON :"schema".ol_schema_migrations, :"schema".function_set TO :"role";

-- Get, List, Health: read the ledger.
GRANT SELECT ON :"schema".operations, :"schema".operation_events TO :"role";
-- The ledger's clock, read by every ops_* function.
GRANT EXECUTE ON FUNCTION :"schema".ledger_now() TO :"role";
GRANT EXECUTE ON FUNCTION :"schema".ops_get_operation(text, integer),
                          :"schema".ops_list_operations(text, integer, text, integer, timestamptz, text),
                          :"schema".ops_health(integer) TO :"role";

-- Settle by Hand: change only the settlement columns, and append (never rewrite) events.
GRANT UPDATE (status, external_ref, retryable, reason, next_check_at, claim_token_hash, claim_expires_at,
              claimed_at, settled_by, settled_by_attempt, settled_at, updated_at) ON :"schema".operations TO :"role";
GRANT INSERT ON :"schema".operation_events TO :"role";
GRANT USAGE ON ALL SEQUENCES IN SCHEMA :"schema" TO :"role";
GRANT EXECUTE ON FUNCTION :"schema".ops_settle_by_hand(jsonb, jsonb),
                          :"schema".append_event(text, text, text, text, integer, bytea, jsonb, integer, jsonb) TO :"role";

-- Compact: drop bodies (request, response) and old events of long-settled operations.
GRANT UPDATE (request, response, compacted_at, compacted_attempt) ON :"schema".operations TO :"role";
GRANT DELETE ON :"schema".operation_events TO :"role";
GRANT EXECUTE ON FUNCTION :"schema".ops_compact_batch(integer, integer, jsonb) TO :"role";

-- Hard delete (explicit choice; read docs/operations.md first), by hand:
--   GRANT DELETE ON <schema>.operations TO <role>;
--   GRANT EXECUTE ON FUNCTION <schema>.ops_hard_delete_batch(integer, integer, text, jsonb) TO <role>;
