-- n8n-nodes-operation-ledger, migration 0011: which execution holds a lease, and operations that
-- may have been written more than once.
--
-- Applied once, in order, by the nodes' migrator (when the credential allows it) or by
-- schema/apply.sql with psql (see the README, "Applying the schema").
--
-- n8n's recovery tools re-run nodes from stored outputs: "Retry (from node with error)" starts a
-- NEW execution at the node that failed, fed by the saved output of every node before it, so a
-- Proceed item of Reserve Operation can reach a separate write node a second time without Reserve
-- being asked (the editor's "Execute step" on a node after Reserve does the same). The write then
-- runs in another execution than the one the lease was granted to.
--
--   operations.lease_execution_id     the n8n execution id the current lease was granted to
--                                     (Reserve's context; NULL when the caller gave none, and for
--                                     leases granted before this migration).
--   operations.possible_duplicate_at  when a report suggested the write may have taken effect more
--                                     than once (NULL: never). Set by confirm_operations:
--                                       - a confirmation from another execution than the lease's
--                                         (the write ran again on a stored Proceed item): reported
--                                         succeeded -> status 'review' for a person; reported failed
--                                         or unknown -> 'unknown' (the first execution may have sent
--                                         it), so Reconcile Unknown asks the target first;
--                                       - a stale report of a success the row does not hold.
--                                     Never cleared: it stays as a mark for the record; Operation
--                                     Ledger Admin lists such operations (List: Possible Duplicates).
--
-- New transitions (each appends an event):
--   reserved | unknown --confirm succeeded from another execution--> review  (possible_duplicate)
--   reserved           --confirm failed/unknown from another execution--> unknown

SET search_path TO :"schema";

ALTER TABLE operations ADD COLUMN IF NOT EXISTS lease_execution_id text;
ALTER TABLE operations ADD COLUMN IF NOT EXISTS possible_duplicate_at timestamptz;

-- What "List: Possible Duplicates" pages through, oldest mark first.
CREATE INDEX IF NOT EXISTS operations_possible_duplicate_idx ON operations (possible_duplicate_at, operation_key)
    WHERE possible_duplicate_at IS NOT NULL;

INSERT INTO ol_schema_migrations (version, name) VALUES (11, 'ledger_lease_execution') ON CONFLICT (version) DO NOTHING;
