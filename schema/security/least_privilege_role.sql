-- A least-privilege login role for the n8n nodes of n8n-nodes-operation-ledger.
--
-- Run as the schema owner (or a superuser) after applying schema/apply.sql:
--   psql "$ADMIN_URL" -1 -v ON_ERROR_STOP=1 -v schema=operation_ledger -v role=n8n_ledger \
--        -v password="$(openssl rand -base64 24)" -f schema/security/least_privilege_role.sql
-- Then point the n8n credential at this role with "Apply Schema Automatically" switched OFF
-- (the role cannot run DDL, which is the point).
--
-- What the role can do: call the ledger and queue functions (they run with the caller's rights)
-- and read, insert and update ledger rows; insert (never update or delete) events; manage queue
-- tasks, including the archive that retention moves finished tasks into.
-- What it cannot do: create, alter or drop anything; delete or truncate ledger rows or events;
-- touch any other schema.

CREATE ROLE :"role" LOGIN PASSWORD :'password' NOSUPERUSER NOCREATEDB NOCREATEROLE NOINHERIT;

REVOKE ALL ON SCHEMA :"schema" FROM PUBLIC;
GRANT USAGE ON SCHEMA :"schema" TO :"role";

-- The ledger: rows are never deleted by the nodes; the event log is append-only.
GRANT SELECT ON :"schema".schema_migrations, :"schema".function_set TO :"role";
GRANT SELECT, INSERT, UPDATE ON :"schema".operations TO :"role";
GRANT SELECT, INSERT ON :"schema".operation_events TO :"role";

-- The task queue: retention deletes finished tasks from the hot table after archiving them.
GRANT SELECT, INSERT, UPDATE, DELETE ON :"schema".queue_tasks TO :"role";
GRANT SELECT, INSERT, UPDATE, DELETE ON :"schema".queue_tasks_archive TO :"role";
GRANT SELECT, INSERT, UPDATE ON :"schema".queue_scheduler TO :"role";

-- Identity columns and the functions the nodes call.
GRANT USAGE ON ALL SEQUENCES IN SCHEMA :"schema" TO :"role";
REVOKE EXECUTE ON ALL FUNCTIONS IN SCHEMA :"schema" FROM PUBLIC;
GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA :"schema" TO :"role";
