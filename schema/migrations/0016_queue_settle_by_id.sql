-- n8n-nodes-operation-ledger: an operator settles a task by id without its lease.
--
-- Settle by ID (queue_settle_by_id) completes, fails (dead or retry) or reschedules a task of a
-- queue by id, recorded with what was done (operator_action), who did it (operator_by), why
-- (operator_reason) and when (operator_at); a dead task keeps the reason as last_error as well. A
-- task held by a lease is acted on at once and its lease ends 'operator': the holder keeps its lease
-- token but the row no longer answers to it, so its next settle or extension answers lease_lost
-- (queue_settle_verdict). The closed lists are src/queue/states.ts (OPERATOR_ACTIONS, LEASE_ENDS,
-- DEAD_REASONS); test/integration/states.test.ts checks them against the CHECK constraints below.

SET search_path TO :"schema";

ALTER TABLE queue_tasks ADD COLUMN IF NOT EXISTS operator_action text;
ALTER TABLE queue_tasks ADD COLUMN IF NOT EXISTS operator_by text CHECK (octet_length(operator_by) <= 240);
ALTER TABLE queue_tasks ADD COLUMN IF NOT EXISTS operator_reason text CHECK (octet_length(operator_reason) <= 8000);
ALTER TABLE queue_tasks ADD COLUMN IF NOT EXISTS operator_at timestamptz;
ALTER TABLE queue_tasks DROP CONSTRAINT IF EXISTS queue_tasks_operator_action_check;
ALTER TABLE queue_tasks ADD CONSTRAINT queue_tasks_operator_action_check
    CHECK (operator_action IN ('complete', 'fail', 'retry', 'reschedule'));

ALTER TABLE queue_tasks_archive ADD COLUMN IF NOT EXISTS operator_action text;
ALTER TABLE queue_tasks_archive ADD COLUMN IF NOT EXISTS operator_by text;
ALTER TABLE queue_tasks_archive ADD COLUMN IF NOT EXISTS operator_reason text;
ALTER TABLE queue_tasks_archive ADD COLUMN IF NOT EXISTS operator_at timestamptz;

-- 'operator': the lease was ended by an operator's Settle by ID while it was held.
ALTER TABLE queue_tasks DROP CONSTRAINT IF EXISTS queue_tasks_lease_end_check;
ALTER TABLE queue_tasks ADD CONSTRAINT queue_tasks_lease_end_check
    CHECK (lease_end IN ('completed', 'failed', 'gave_up', 'released', 'expired', 'requeued', 'cancelled', 'operator'));
-- 'operator_failed': an operator failed the task to dead by hand.
ALTER TABLE queue_tasks DROP CONSTRAINT IF EXISTS queue_tasks_dead_reason_check;
ALTER TABLE queue_tasks ADD CONSTRAINT queue_tasks_dead_reason_check
    CHECK (dead_reason IN ('max_attempts_reached', 'gave_up', 'lease_expired_at_max', 'attempts_exhausted', 'operator_failed'));

INSERT INTO ol_schema_migrations (version, name) VALUES (16, 'queue_settle_by_id') ON CONFLICT (version) DO NOTHING;
