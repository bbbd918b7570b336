-- n8n-nodes-operation-ledger: how the functions run, and who may call which.
--
-- Applied after every function file, in the same transaction (by the migrator and by
-- schema/apply.sql), with search_path set to the schema. Part of the function set's hash.
--
-- ENTRY POINTS (the one list, ol_entry_points() below): the functions a role may call, each with
-- its audience:
--   nodes         what the workflow nodes call (Reserve, Confirm, Reconcile Unknown, Priority
--                 Dequeue and its trigger); schema/security/least_privilege_role.sql grants EXECUTE
--                 on exactly these to the nodes' role.
--   operator      what the Operation Ledger Admin node calls (Get, List, Health, Settle by Hand,
--                 Compact); schema/security/operator_role.sql grants EXECUTE on exactly these.
--   hard_delete   Hard Delete: granted to the operator role only on an explicit choice
--                 (operator_role.sql -v hard_delete=1).
-- Each entry point is SECURITY DEFINER: it runs with its owner's rights (the schema owner), so no
-- caller needs, or gets, any right on a table. Every change to the ledger's rows goes through these
-- functions, which record an event for each change (the queue records each change on the task row:
-- status, attempts, lease_end, dead_reason, last_error). Every other function is SECURITY INVOKER
-- and callable only from them (EXECUTE is revoked from PUBLIC on all).
--
-- Every function of the schema gets search_path = <schema>, pg_temp: pg_temp named LAST, so a
-- temporary table (e.g. one called operation_events) can never shadow the ledger's tables, and
-- nothing outside the schema and pg_catalog is found. One exception, INLINED below: a SQL function
-- that reads no table and calls only pg_catalog functions (always searched first), left without a
-- SET clause so that the planner can inline it into its callers (a SET clause forbids that and
-- costs a configuration change per call); it is not an entry point either.
-- docs/security.md says what a caller can and cannot do through each entry point.
CREATE OR REPLACE FUNCTION ol_entry_points()
RETURNS TABLE (function_name text, audience text)
LANGUAGE sql IMMUTABLE
AS $$
    SELECT x.f, x.a FROM (VALUES
        -- ledger
        ('reserve_operations', 'nodes'), ('confirm_operations', 'nodes'), ('reconcile_claim', 'nodes'),
        ('reconcile_resolve', 'nodes'),
        -- queue
        ('queue_enqueue', 'nodes'), ('queue_claim', 'nodes'), ('queue_complete', 'nodes'), ('queue_fail', 'nodes'),
        ('queue_release', 'nodes'), ('queue_extend_lease', 'nodes'), ('queue_stats', 'nodes'), ('queue_list_dead', 'nodes'),
        ('queue_requeue_dead', 'nodes'), ('queue_purge', 'nodes'), ('queue_next_due', 'nodes'), ('queue_wake_state', 'nodes'),
        ('queue_health', 'nodes'), ('queue_cancel', 'nodes'), ('queue_pause', 'nodes'),
        ('queue_resume', 'nodes'), ('queue_settle_by_id', 'nodes'),
        -- Operation Ledger Admin
        ('ops_get_operation', 'operator'), ('ops_list_operations', 'operator'), ('ops_health', 'operator'),
        ('ops_settle_by_hand', 'operator'), ('ops_compact_batch', 'operator'),
        ('ops_hard_delete_batch', 'hard_delete')
    ) AS x(f, a)
$$;

DO $$
DECLARE
    -- INLINED (see the header): no SET clause, so the planner inlines them.
    inlined constant text[] := ARRAY['ol_refused_chars', 'queue_now', 'ledger_token_hash', 'downstream_idempotency_key'];
    v_ns oid := (SELECT oid FROM pg_namespace WHERE nspname = current_schema());
    f record;
    v_missing text;
BEGIN
    IF v_ns IS NULL THEN
        RAISE EXCEPTION 'function_security.sql: search_path must name the ledger schema first';
    END IF;
    SELECT string_agg(e.function_name, ', ') INTO v_missing
      FROM ol_entry_points() AS e
     WHERE NOT EXISTS (SELECT 1 FROM pg_proc p WHERE p.pronamespace = v_ns AND p.proname = e.function_name);
    IF v_missing IS NOT NULL THEN
        RAISE EXCEPTION 'function_security.sql: entry points missing from schema %: %', current_schema(), v_missing;
    END IF;
    FOR f IN SELECT p.oid::regprocedure AS sig, p.proname, p.prokind FROM pg_proc p WHERE p.pronamespace = v_ns AND p.prokind = 'f' LOOP
        IF f.proname = ANY (inlined) THEN
            EXECUTE format('ALTER FUNCTION %s RESET ALL', f.sig);
        ELSE
            EXECUTE format('ALTER FUNCTION %s SET search_path = %I, pg_temp', f.sig, current_schema());
        END IF;
        EXECUTE format('REVOKE EXECUTE ON FUNCTION %s FROM PUBLIC', f.sig);
        IF EXISTS (SELECT 1 FROM ol_entry_points() e WHERE e.function_name = f.proname) THEN
            EXECUTE format('ALTER FUNCTION %s SECURITY DEFINER', f.sig);
        ELSE
            EXECUTE format('ALTER FUNCTION %s SECURITY INVOKER', f.sig);
        END IF;
    END LOOP;
END $$;
