-- n8n-nodes-operation-ledger: the version table is <schema>.ol_schema_migrations. Before 0.1.x it
-- was <schema>.schema_migrations; a table of that name is renamed ONLY when it is ours (the exact
-- columns version/name/applied_at and our first migration recorded as (1, 'ledger')), so another
-- tool's schema_migrations in the same schema is never taken for ours, nor touched.
-- Run with search_path set to the schema (the migrator and schema/apply.sql both do).
DO $$
DECLARE
    v_cols text;
    v_ours boolean;
BEGIN
    IF current_schema() IS NULL THEN
        RETURN;
    END IF;
    IF to_regclass(format('%I.ol_schema_migrations', current_schema())) IS NOT NULL
       OR to_regclass(format('%I.schema_migrations', current_schema())) IS NULL THEN
        RETURN;
    END IF;
    SELECT string_agg(attname || ':' || format_type(atttypid, atttypmod), ',' ORDER BY attnum) INTO v_cols
      FROM pg_attribute
     WHERE attrelid = to_regclass(format('%I.schema_migrations', current_schema())) AND attnum > 0 AND NOT attisdropped;
    IF v_cols IS DISTINCT FROM 'version:integer,name:text,applied_at:timestamp with time zone' THEN
        RETURN;
    END IF;
    EXECUTE format('SELECT EXISTS (SELECT 1 FROM %I.schema_migrations WHERE version = 1 AND name = %L)', current_schema(), 'ledger')
       INTO v_ours;
    IF NOT v_ours THEN
        RETURN;
    END IF;
    EXECUTE format('ALTER TABLE %I.schema_migrations RENAME TO ol_schema_migrations', current_schema());
END $$;
