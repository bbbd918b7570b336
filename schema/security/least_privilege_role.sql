-- The split setup of n8n-nodes-operation-ledger: a NOLOGIN owner role owns the schema, its tables
-- and its functions; the nodes log in as a role that can only call the entry-point functions.
--
-- Run as a superuser after applying schema/apply.sql, and again after every schema upgrade
-- (it is idempotent: it creates what is missing and resets ownership and privileges):
--   psql "$ADMIN_URL" -1 -v ON_ERROR_STOP=1 -v schema=operation_ledger -v role=n8n_ledger \
--        -v password="$(openssl rand -base64 24)" -f schema/security/least_privilege_role.sql
-- Variables: schema, role (required); password (required when the role does not exist yet;
-- when given for an existing role, it is set again); owner (default <schema>_owner);
-- keep_public_temp=1 to leave TEMPORARY on this database granted to PUBLIC (see below).
-- Then point the n8n credential at `role` with "Apply Schema Automatically" switched OFF.
--
-- What the nodes' role can do: call the nodes' entry-point functions (the one list is
-- ol_entry_points() in schema/security/function_security.sql, audience 'nodes'; each is SECURITY
-- DEFINER) and read the two version tables (ol_schema_migrations, function_set) to check the
-- schema. The Admin node's functions are not granted to it (schema/security/operator_role.sql).
-- What it cannot do: read or write any table directly (no SELECT/INSERT/UPDATE/DELETE/TRUNCATE),
-- call the internal functions (e.g. append_event), alter, disable triggers on or drop anything
-- (it owns nothing), create objects in the schema, or create temporary tables in this database.
--
-- TEMPORARY: Postgres grants it on every database to PUBLIC; a role can only be denied it when
-- PUBLIC loses it, so this script revokes TEMPORARY on the current database from PUBLIC (roles
-- that need temporary tables here must be granted it by name). The functions are safe without
-- this (pg_temp is last in their search_path); it is defence in depth.

\set ON_ERROR_STOP on
\if :{?schema}
\else
\echo 'least_privilege_role.sql: -v schema=... is required'
\quit
\endif
\if :{?role}
\else
\echo 'least_privilege_role.sql: -v role=... is required'
\quit
\endif
\if :{?owner}
\else
\set owner :schema _owner
\endif
\if :{?keep_public_temp}
\else
\set keep_public_temp 0
\endif

-- The owner role: NOLOGIN, nobody logs in as it.
SELECT NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = :'owner') AS ol_new_owner \gset
\if :ol_new_owner
CREATE ROLE :"owner" NOLOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOINHERIT NOREPLICATION NOBYPASSRLS;
\else
ALTER ROLE :"owner" NOLOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS;
\endif

-- The nodes' login role.
SELECT NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = :'role') AS ol_new_role \gset
\if :ol_new_role
\if :{?password}
\else
\echo 'least_privilege_role.sql: -v password=... is required to create the role'
\quit
\endif
CREATE ROLE :"role" LOGIN PASSWORD :'password' NOSUPERUSER NOCREATEDB NOCREATEROLE NOINHERIT NOREPLICATION NOBYPASSRLS;
\else
ALTER ROLE :"role" LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOINHERIT NOREPLICATION NOBYPASSRLS;
\if :{?password}
ALTER ROLE :"role" PASSWORD :'password';
\endif
\endif

SELECT set_config('ol.schema', :'schema', false), set_config('ol.owner', :'owner', false), set_config('ol.role', :'role', false),
       set_config('ol.keep_public_temp', :'keep_public_temp', false) \g /dev/null

DO $$
DECLARE
    v_schema text := current_setting('ol.schema');
    v_owner  text := current_setting('ol.owner');
    v_role   text := current_setting('ol.role');
    v_ns     oid  := (SELECT oid FROM pg_namespace WHERE nspname = current_setting('ol.schema'));
    r record;
BEGIN
    IF v_ns IS NULL THEN
        RAISE EXCEPTION 'schema % does not exist: apply schema/apply.sql first', v_schema;
    END IF;
    IF v_role = v_owner THEN
        RAISE EXCEPTION 'the nodes'' role and the owner role must differ';
    END IF;
    IF pg_has_role(v_role, v_owner, 'MEMBER') THEN
        EXECUTE format('REVOKE %I FROM %I', v_owner, v_role);
    END IF;

    -- Everything in the schema belongs to the owner role (identity sequences follow their table).
    EXECUTE format('ALTER SCHEMA %I OWNER TO %I', v_schema, v_owner);
    FOR r IN SELECT c.oid::regclass AS rel, c.relkind FROM pg_class c
              WHERE c.relnamespace = v_ns AND c.relkind IN ('r', 'p', 'v', 'm', 'S', 'f')
                AND NOT EXISTS (SELECT 1 FROM pg_depend d WHERE d.classid = 'pg_class'::regclass AND d.objid = c.oid AND d.deptype IN ('a', 'i'))
    LOOP
        EXECUTE format('ALTER %s %s OWNER TO %I',
                       CASE r.relkind WHEN 'S' THEN 'SEQUENCE' WHEN 'v' THEN 'VIEW' WHEN 'm' THEN 'MATERIALIZED VIEW'
                                      WHEN 'f' THEN 'FOREIGN TABLE' ELSE 'TABLE' END, r.rel, v_owner);
    END LOOP;
    FOR r IN SELECT p.oid::regprocedure AS fn FROM pg_proc p WHERE p.pronamespace = v_ns AND p.prokind = 'f' LOOP
        EXECUTE format('ALTER FUNCTION %s OWNER TO %I', r.fn, v_owner);
    END LOOP;

    -- Start from nothing, for PUBLIC and the nodes' role (also removes grants of older versions).
    EXECUTE format('REVOKE ALL ON SCHEMA %I FROM PUBLIC, %I', v_schema, v_role);
    EXECUTE format('REVOKE ALL ON ALL TABLES IN SCHEMA %I FROM PUBLIC, %I', v_schema, v_role);
    EXECUTE format('REVOKE ALL ON ALL SEQUENCES IN SCHEMA %I FROM PUBLIC, %I', v_schema, v_role);
    EXECUTE format('REVOKE ALL ON ALL FUNCTIONS IN SCHEMA %I FROM PUBLIC, %I', v_schema, v_role);

    -- What the nodes need: the schema (to name its functions), the version tables (read only)
    -- and EXECUTE on the nodes' entry points (ol_entry_points(), function_security.sql: SECURITY
    -- DEFINER functions; the Admin node's are for the operator role, operator_role.sql).
    IF to_regprocedure(format('%I.ol_entry_points()', v_schema)) IS NULL THEN
        RAISE EXCEPTION 'schema % has no ol_entry_points(): apply schema/apply.sql of this package first', v_schema;
    END IF;
    EXECUTE format('GRANT USAGE ON SCHEMA %I TO %I', v_schema, v_role);
    FOR r IN SELECT c.oid::regclass AS rel FROM pg_class c
              WHERE c.relnamespace = v_ns AND c.relname IN ('ol_schema_migrations', 'function_set') LOOP
        EXECUTE format('GRANT SELECT ON %s TO %I', r.rel, v_role);
    END LOOP;
    FOR r IN EXECUTE format('SELECT p.oid::regprocedure AS fn FROM pg_proc p JOIN %I.ol_entry_points() e ON e.function_name = p.proname
                              WHERE p.pronamespace = $1 AND p.prokind = %L AND p.prosecdef AND e.audience = %L', v_schema, 'f', 'nodes')
             USING v_ns LOOP
        EXECUTE format('GRANT EXECUTE ON FUNCTION %s TO %I', r.fn, v_role);
    END LOOP;

    -- No temporary tables for the nodes' role (see the header).
    IF coalesce(current_setting('ol.keep_public_temp', true), '') NOT IN ('1', 'on', 'true') THEN
        EXECUTE format('REVOKE TEMPORARY ON DATABASE %I FROM PUBLIC', current_database());
        EXECUTE format('REVOKE TEMPORARY ON DATABASE %I FROM %I', current_database(), v_role);
    END IF;
END $$;
