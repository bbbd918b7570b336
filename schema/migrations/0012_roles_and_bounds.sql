-- n8n-nodes-operation-ledger, migration 0012: only the functions change the ledger, for every role;
-- a consumer's claims find its own groups' due tasks.
--
-- Applied once, in order, by the nodes' migrator (when the credential allows it) or by
-- schema/apply.sql with psql (see the README, "Applying the schema"). docs/security.md says who may
-- do what and how each rule is enforced.
--
-- 1. Who wrote an event. operation_events.db_role: the database login role of the session that
--    wrote the event (session_user, which a SECURITY DEFINER function does not change, and which a
--    caller cannot set: SET ROLE and SET SESSION AUTHORIZATION change current_user, or need a
--    superuser). The node's execution, workflow and node name (and a Settle by Hand's "Decided
--    By") are what the caller says; db_role is what the database knows. Null for events written
--    before this migration.
-- 2. Retention's deletes. The append-only trigger on operation_events used to let a DELETE through
--    whenever the transaction-local setting n8n_operation_ledger.retention was 'on', and any session
--    can set that. Now it also needs current_user to be the owner of the table, which inside the
--    SECURITY DEFINER retention functions (ops_compact_batch, ops_hard_delete_batch, owned by the
--    schema owner) it is, and for any other role it is not: no setting, grant of DELETE or function
--    of the caller's own can make current_user the owner (only membership in the owner role, which
--    is granted to no one, or a superuser). operations gets the same guard for DELETE (only Hard
--    Delete removes operations).
-- 3. Settle by Hand respects the settle window (or records an explicit override):
--    ops_settle_by_hand gains a result column, so its old definition is dropped here (the function
--    file creates the new one; the role scripts grant it again, see docs/security.md).
-- 4. Untagged due tasks found per group: queue_tasks_untagged_idx gains priority_group, so a claim
--    that lists some groups tags (and probes for) due tasks of those groups only, whatever backlog
--    another group has (it used to tag the 10,000 oldest untagged tasks of the queue, listed or not,
--    and came back empty meanwhile).

SET search_path TO :"schema";

ALTER TABLE operation_events ADD COLUMN IF NOT EXISTS db_role text;
ALTER TABLE operation_events ALTER COLUMN db_role SET DEFAULT session_user;

-- The one guard of both tables: DELETE only from the owner's retention functions (see 2 above).
-- UPDATE of an event is always refused. current_user is compared with the table's owner, read from
-- the catalog (pg_class.relowner), so the guard follows ALTER TABLE ... OWNER TO.
CREATE OR REPLACE FUNCTION operation_events_append_only() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'DELETE' AND current_setting('n8n_operation_ledger.retention', true) = 'on'
       AND current_user = (SELECT pg_get_userbyid(c.relowner) FROM pg_class c WHERE c.oid = TG_RELID) THEN
        RETURN OLD;
    END IF;
    IF TG_TABLE_NAME = 'operations' THEN
        RAISE EXCEPTION 'DELETE of %.operations is refused: only the schema owner''s retention function (ops_hard_delete_batch) removes operations', TG_TABLE_SCHEMA
            USING ERRCODE = 'insufficient_privilege';
    END IF;
    RAISE EXCEPTION 'operation_events is append-only (% refused)', TG_OP USING ERRCODE = 'insufficient_privilege';
END $$;
DROP TRIGGER IF EXISTS operations_no_delete ON operations;
CREATE TRIGGER operations_no_delete
    BEFORE DELETE ON operations
    FOR EACH ROW EXECUTE FUNCTION operation_events_append_only();

DROP FUNCTION IF EXISTS ops_settle_by_hand(jsonb, jsonb);

DROP INDEX IF EXISTS queue_tasks_untagged_idx;
-- queue_tag_due now takes the claim's groups (schema/functions/queue/queue_tag_due.sql).
DROP FUNCTION IF EXISTS queue_tag_due(text, timestamptz);
CREATE INDEX IF NOT EXISTS queue_tasks_untagged_group_idx ON queue_tasks (queue, priority_group, run_at, id)
    WHERE status = 'pending' AND vtag IS NULL;

INSERT INTO ol_schema_migrations (version, name) VALUES (12, 'roles_and_bounds') ON CONFLICT (version) DO NOTHING;
