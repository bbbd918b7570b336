-- n8n-nodes-operation-ledger: how the functions run, and which ones the nodes may call.
--
-- Applied after every function file, in the same transaction (by the migrator and by
-- schema/apply.sql), with search_path set to the schema. Part of the function set's hash.
--
-- ENTRY POINTS (the one list): the functions the nodes call. Each is SECURITY DEFINER, so it runs
-- with its owner's rights; the nodes' role needs EXECUTE on these and nothing else
-- (schema/security/least_privilege_role.sql grants EXECUTE on exactly the SECURITY DEFINER
-- functions of the schema). Every other function is SECURITY INVOKER and callable only from them.
--
-- Every function of the schema gets search_path = <schema>, pg_temp: pg_temp named LAST, so a
-- temporary table (e.g. one called operation_events) can never shadow the ledger's tables, and
-- nothing outside the schema and pg_catalog is found. EXECUTE is revoked from PUBLIC on all.
DO $$
DECLARE
    entry_points constant text[] := ARRAY[
        -- ledger
        'reserve_operations', 'confirm_operations', 'reconcile_claim', 'reconcile_resolve',
        -- queue
        'queue_enqueue', 'queue_claim', 'queue_complete', 'queue_fail', 'queue_release',
        'queue_extend_lease', 'queue_stats', 'queue_list_dead', 'queue_requeue_dead', 'queue_purge',
        'queue_next_due', 'queue_wake_state', 'queue_health'
    ];
    v_ns oid := (SELECT oid FROM pg_namespace WHERE nspname = current_schema());
    f record;
    v_missing text;
BEGIN
    IF v_ns IS NULL THEN
        RAISE EXCEPTION 'function_security.sql: search_path must name the ledger schema first';
    END IF;
    SELECT string_agg(e, ', ') INTO v_missing
      FROM unnest(entry_points) AS e
     WHERE NOT EXISTS (SELECT 1 FROM pg_proc p WHERE p.pronamespace = v_ns AND p.proname = e);
    IF v_missing IS NOT NULL THEN
        RAISE EXCEPTION 'function_security.sql: entry points missing from schema %: %', current_schema(), v_missing;
    END IF;
    FOR f IN SELECT p.oid::regprocedure AS sig, p.proname, p.prokind FROM pg_proc p WHERE p.pronamespace = v_ns AND p.prokind = 'f' LOOP
        EXECUTE format('ALTER FUNCTION %s SET search_path = %I, pg_temp', f.sig, current_schema());
        EXECUTE format('REVOKE EXECUTE ON FUNCTION %s FROM PUBLIC', f.sig);
        IF f.proname = ANY (entry_points) THEN
            EXECUTE format('ALTER FUNCTION %s SECURITY DEFINER', f.sig);
        ELSE
            EXECUTE format('ALTER FUNCTION %s SECURITY INVOKER', f.sig);
        END IF;
    END LOOP;
END $$;
