-- n8n-nodes-operation-ledger, migration 0006: how each lease ended, and why a task went dead.
--
-- A late settle (complete, fail, release, extend lease) from a lease that is no longer live must be
-- told what happened to the task. The lease token alone cannot say it: the expiry sweep keeps the
-- token on the row, so "this token settled the task" and "this token's lease expired" looked the
-- same. lease_end records how the row's last lease (lease_token) ended; dead_reason records why the
-- task went dead. queue_settle_verdict (schema/functions/queue/) turns both into the outcome.
--
--   lease_end:   null while the lease is live (and for rows never claimed)
--                'completed' | 'failed' | 'gave_up' | 'released'   the holder settled it
--                'expired'                                         the expiry sweep ended it
--                'requeued'                                        the task went dead and was requeued by hand
--   dead_reason: null unless dead
--                'max_attempts_reached'   a fail at the last attempt
--                'gave_up'                a fail with give up
--                'lease_expired_at_max'   the lease of the last attempt expired
--                'attempts_exhausted'     a pending task whose attempts were already used up, found by a claim
--                                         (never handed out)
--
-- Rows from before this migration keep null in both; the verdict treats a null lease_end like
-- the old rule did (same token, not processing: this lease settled it).

SET search_path TO :"schema";

ALTER TABLE queue_tasks ADD COLUMN IF NOT EXISTS lease_end text
    CHECK (lease_end IN ('completed', 'failed', 'gave_up', 'released', 'expired', 'requeued'));
ALTER TABLE queue_tasks ADD COLUMN IF NOT EXISTS dead_reason text
    CHECK (dead_reason IN ('max_attempts_reached', 'gave_up', 'lease_expired_at_max', 'attempts_exhausted'));
ALTER TABLE queue_tasks_archive ADD COLUMN IF NOT EXISTS lease_end text;
ALTER TABLE queue_tasks_archive ADD COLUMN IF NOT EXISTS dead_reason text;

INSERT INTO ol_schema_migrations (version, name) VALUES (6, 'queue_lease_end') ON CONFLICT (version) DO NOTHING;
