-- n8n-nodes-operation-ledger, migration 0007: the ledger refuses TRUNCATE.
--
-- Row triggers cannot see TRUNCATE, so without this a role allowed to truncate (the schema owner,
-- e.g. the credential of a setup that applies the schema automatically) could empty the ledger or
-- its event log in one statement. Statement triggers refuse it for both tables. The table owner
-- can still disable a trigger (ALTER TABLE ... DISABLE TRIGGER): that is why the nodes should use
-- a role that owns nothing (schema/security/least_privilege_role.sql; docs/security.md).
-- The trigger function lives here, with its triggers (migrations run before the function set).

SET search_path TO :"schema";

CREATE OR REPLACE FUNCTION ledger_refuse_truncate() RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
    RAISE EXCEPTION 'TRUNCATE of %.% is refused: the operation ledger is append-only', TG_TABLE_SCHEMA, TG_TABLE_NAME
        USING ERRCODE = 'insufficient_privilege';
END $$;
REVOKE EXECUTE ON FUNCTION ledger_refuse_truncate() FROM PUBLIC;

DROP TRIGGER IF EXISTS operations_no_truncate ON operations;
DROP TRIGGER IF EXISTS operation_events_no_truncate ON operation_events;
CREATE TRIGGER operations_no_truncate
    BEFORE TRUNCATE ON operations
    FOR EACH STATEMENT EXECUTE FUNCTION ledger_refuse_truncate();
CREATE TRIGGER operation_events_no_truncate
    BEFORE TRUNCATE ON operation_events
    FOR EACH STATEMENT EXECUTE FUNCTION ledger_refuse_truncate();

INSERT INTO ol_schema_migrations (version, name) VALUES (7, 'boundary') ON CONFLICT (version) DO NOTHING;
