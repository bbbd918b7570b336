-- A least-privilege login role for operators: the "Operation Ledger Admin" node (Get, List,
-- Health, Settle by Hand, Compact; Hard Delete only on an explicit choice). Separate from the
-- nodes' role (least_privilege_role.sql): workflows that reserve and confirm never need to settle
-- by hand or remove anything, and an operator never needs to reserve.
--
-- Run as a superuser (or a role that may create roles and owns the schema) after applying
-- schema/apply.sql and least_privilege_role.sql, and again after every schema upgrade. It is
-- idempotent: it creates the role when missing, and otherwise resets its privileges to exactly
-- these (removing the table grants older versions of this script gave):
--   psql "$ADMIN_URL" -1 -v ON_ERROR_STOP=1 -v schema=operation_ledger -v role=n8n_ledger_operator \
--        -v password="$(openssl rand -base64 24)" -f schema/security/operator_role.sql
-- Variables: schema, role (required); password (required when the role does not exist yet; when
-- given for an existing role, it is set again); hard_delete=1 to also grant Hard Delete (a deleted
-- key that is retried runs its write again: read docs/operations.md first). Run again without it to
-- take Hard Delete away.
-- Point a SEPARATE n8n credential at this role ("Apply Schema Automatically" OFF) and use it only
-- in operator workflows. docs/operations.md and docs/security.md list what each operation needs.
--
-- What the operator role can do: USAGE on the schema, SELECT on the two version tables
-- (ol_schema_migrations, function_set: the schema check every node makes) and EXECUTE on the
-- operator entry points (ol_entry_points() in schema/security/function_security.sql, audience
-- 'operator', plus 'hard_delete' when chosen). Those functions are SECURITY DEFINER: they read
-- and change the ledger with their owner's rights, record an event for each change, and take only
-- the arguments that decision needs. Nothing else: no right on any table, sequence or other
-- function, so it cannot rewrite an operation's status, write or delete an event, or touch the
-- queue except through those functions.
--
-- The functions run as their owner, so this script refuses when that owner is a superuser (then
-- every bug in a function would run with a superuser's rights) or is not the schema's owner: run
-- least_privilege_role.sql first, which gives the schema to a NOLOGIN owner role.

\set ON_ERROR_STOP on
\if :{?schema}
\else
\echo 'operator_role.sql: -v schema=... is required'
\quit
\endif
\if :{?role}
\else
\echo 'operator_role.sql: -v role=... is required'
\quit
\endif
\if :{?hard_delete}
\else
\set hard_delete 0
\endif

SELECT NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = :'role') AS ol_new_role \gset
\if :ol_new_role
\if :{?password}
\else
\echo 'operator_role.sql: -v password=... is required to create the role'
\quit
\endif
CREATE ROLE :"role" LOGIN PASSWORD :'password' NOSUPERUSER NOCREATEDB NOCREATEROLE NOINHERIT NOREPLICATION NOBYPASSRLS;
\else
ALTER ROLE :"role" LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOINHERIT NOREPLICATION NOBYPASSRLS;
\if :{?password}
ALTER ROLE :"role" PASSWORD :'password';
\endif
\endif

SELECT set_config('ol.schema', :'schema', false), set_config('ol.role', :'role', false),
       set_config('ol.hard_delete', :'hard_delete', false) \g /dev/null

DO $$
DECLARE
    v_schema text := current_setting('ol.schema');
    v_role   text := current_setting('ol.role');
    v_hard   boolean := coalesce(current_setting('ol.hard_delete', true), '') IN ('1', 'on', 'true');
    v_ns     oid  := (SELECT oid FROM pg_namespace WHERE nspname = current_setting('ol.schema'));
    v_owner  text;
    v_bad    text;
    r record;
BEGIN
    IF v_ns IS NULL THEN
        RAISE EXCEPTION 'schema % does not exist: apply schema/apply.sql first', v_schema;
    END IF;
    IF to_regprocedure(format('%I.ol_entry_points()', v_schema)) IS NULL THEN
        RAISE EXCEPTION 'schema % has no ol_entry_points(): apply schema/apply.sql of this package first', v_schema;
    END IF;
    SELECT pg_get_userbyid(n.nspowner) INTO v_owner FROM pg_namespace n WHERE n.oid = v_ns;
    IF v_role = v_owner THEN
        RAISE EXCEPTION 'the operator role and the schema owner (%) must differ', v_owner;
    END IF;
    IF (SELECT rolsuper FROM pg_roles WHERE rolname = v_owner) THEN
        RAISE EXCEPTION 'schema % is owned by the superuser %: its SECURITY DEFINER functions would run with a superuser''s rights. Run schema/security/least_privilege_role.sql first (it gives the schema to a NOLOGIN owner role), then this script again', v_schema, v_owner;
    END IF;
    EXECUTE format('SELECT string_agg(p.oid::regprocedure::text || '' (owner '' || pg_get_userbyid(p.proowner) || '')'', '', '')
                      FROM pg_proc p JOIN %I.ol_entry_points() e ON e.function_name = p.proname
                     WHERE p.pronamespace = $1 AND (p.proowner <> (SELECT nspowner FROM pg_namespace WHERE oid = $1) OR NOT p.prosecdef)', v_schema)
       INTO v_bad USING v_ns;
    IF v_bad IS NOT NULL THEN
        RAISE EXCEPTION 'entry points of schema % must be SECURITY DEFINER functions owned by the schema owner %: %. Apply schema/apply.sql and run schema/security/least_privilege_role.sql first', v_schema, v_owner, v_bad;
    END IF;
    IF pg_has_role(v_role, v_owner, 'MEMBER') THEN
        EXECUTE format('REVOKE %I FROM %I', v_owner, v_role);
    END IF;

    -- Start from nothing (also removes the table, sequence and function grants of older versions).
    EXECUTE format('REVOKE ALL ON SCHEMA %I FROM %I', v_schema, v_role);
    EXECUTE format('REVOKE ALL ON ALL TABLES IN SCHEMA %I FROM %I', v_schema, v_role);
    EXECUTE format('REVOKE ALL ON ALL SEQUENCES IN SCHEMA %I FROM %I', v_schema, v_role);
    EXECUTE format('REVOKE ALL ON ALL FUNCTIONS IN SCHEMA %I FROM %I', v_schema, v_role);

    EXECUTE format('GRANT USAGE ON SCHEMA %I TO %I', v_schema, v_role);
    -- The schema version check every node makes on first use.
    FOR r IN SELECT c.oid::regclass AS rel FROM pg_class c
              WHERE c.relnamespace = v_ns AND c.relname IN ('ol_schema_migrations', 'function_set') LOOP
        EXECUTE format('GRANT SELECT ON %s TO %I', r.rel, v_role);
    END LOOP;
    FOR r IN EXECUTE format('SELECT p.oid::regprocedure AS fn FROM pg_proc p JOIN %I.ol_entry_points() e ON e.function_name = p.proname
                              WHERE p.pronamespace = $1 AND p.prokind = %L AND (e.audience = %L OR (e.audience = %L AND $2))',
                             v_schema, 'f', 'operator', 'hard_delete')
             USING v_ns, v_hard LOOP
        EXECUTE format('GRANT EXECUTE ON FUNCTION %s TO %I', r.fn, v_role);
    END LOOP;
END $$;
