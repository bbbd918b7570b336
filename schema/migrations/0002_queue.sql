-- n8n-nodes-operation-ledger, migration 0002: the priority task queue's tables (Priority Dequeue).
--
-- Applied once, in order, by the nodes' migrator (when the credential allows it) or by
-- schema/apply.sql with psql (see the README, "Applying the schema"). Later migrations add
-- columns, tables and indexes; the functions that change the queue are in schema/functions/queue/,
-- one per file.
--
-- A task is one row of queue_tasks while it is live or dead; a succeeded task moves to
-- queue_tasks_archive in the same statement that completes it, so the hot table only holds work.
--
-- State machine: drawn once, in docs/queue.md ("Task life"), arrow by arrow with each arrow's
-- guarded statement. The closed list of states is src/queue/states.ts (TASK_STATES);
-- test/integration/states.test.ts checks it against the CHECK constraints below.
--
-- A lease is live while status = 'processing' and its lease_expires_at has not passed. Every
-- settling statement (complete, fail, extend lease, release) requires a live lease with the
-- caller's lease token; a holder whose lease was lost changes nothing and is told why.
--
-- Which task a claim takes (weighted fair queuing across priority groups, and aging) is decided
-- by start-time fair queuing tags given at enqueue (migration 0009) and an aging sweep (migration
-- 0010), as docs/queue.md explains ("Weighted fair queuing (Scheduling)", "Aging").

SET search_path TO :"schema";

CREATE TABLE queue_tasks (
    id                bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    queue             text NOT NULL CHECK (octet_length(queue) BETWEEN 1 AND 200),
    priority_group    text NOT NULL CHECK (octet_length(priority_group) BETWEEN 1 AND 100),
    status            text NOT NULL CHECK (status IN ('pending', 'processing', 'dead')),
    payload           jsonb NOT NULL DEFAULT '{}'::jsonb,
    -- Enqueue is idempotent per (queue, dedupe_key) while the task is live (pending or processing).
    dedupe_key        text CHECK (octet_length(dedupe_key) BETWEEN 1 AND 512),
    -- When the task may be claimed: the not-before time, the retry time after a backoff, or the
    -- original availability time (kept through a claim, so an expired lease puts the task back at
    -- the head of its group).
    run_at            timestamptz NOT NULL DEFAULT now(),
    -- Number of claims in this life of the task (a claim whose lease expires counts too).
    attempts          integer NOT NULL DEFAULT 0 CHECK (attempts >= 0),
    max_attempts      integer NOT NULL DEFAULT 5 CHECK (max_attempts BETWEEN 1 AND 1000),
    -- The last holder's token; live only while status = 'processing' and lease_expires_at > now().
    lease_token       uuid,
    lease_expires_at  timestamptz,
    claimed_at        timestamptz,
    last_error        text,
    requeues          integer NOT NULL DEFAULT 0,
    enqueued_at       timestamptz NOT NULL DEFAULT now(),
    updated_at        timestamptz NOT NULL DEFAULT now(),
    dead_at           timestamptz,
    CHECK (status <> 'processing' OR (lease_token IS NOT NULL AND lease_expires_at IS NOT NULL)),
    CHECK ((status = 'dead') = (dead_at IS NOT NULL))
);
-- A queue table churns: vacuum it early so claimed rows do not linger in the ready index.
ALTER TABLE queue_tasks SET (autovacuum_vacuum_scale_factor = 0.01, autovacuum_analyze_scale_factor = 0.02);

-- The claim reads each group's ready head from this index: (queue, group) is an equality prefix and
-- (run_at, id) the FIFO order, so a claim costs a few index probes whether 10 thousand or 1 million
-- tasks are pending.
CREATE INDEX queue_tasks_ready_idx ON queue_tasks (queue, priority_group, run_at, id) WHERE status = 'pending';
-- Expired leases, found by the claim's sweep and by the trigger's due check.
CREATE INDEX queue_tasks_lease_idx ON queue_tasks (queue, lease_expires_at) WHERE status = 'processing';
CREATE INDEX queue_tasks_dead_idx ON queue_tasks (queue, dead_at, id) WHERE status = 'dead';
CREATE UNIQUE INDEX queue_tasks_dedupe_idx ON queue_tasks (queue, dedupe_key)
    WHERE dedupe_key IS NOT NULL AND status IN ('pending', 'processing');

-- Finished tasks: succeeded (moved by queue_complete) and dead (moved by queue_purge after the dead
-- retention). queue_purge deletes archive rows after the archive retention.
CREATE TABLE queue_tasks_archive (
    id                bigint PRIMARY KEY,
    queue             text NOT NULL,
    priority_group    text NOT NULL,
    status            text NOT NULL CHECK (status IN ('succeeded', 'dead')),
    payload           jsonb NOT NULL,
    dedupe_key        text,
    attempts          integer NOT NULL,
    max_attempts      integer NOT NULL,
    lease_token       uuid,
    last_error        text,
    result            jsonb,
    requeues          integer NOT NULL DEFAULT 0,
    enqueued_at       timestamptz NOT NULL,
    finished_at       timestamptz NOT NULL,
    archived_at       timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX queue_tasks_archive_finished_idx ON queue_tasks_archive (queue, status, finished_at);
CREATE INDEX queue_tasks_archive_archived_idx ON queue_tasks_archive (archived_at);

-- A smooth weighted round robin's state per queue (current weight per group, claims so far). No
-- function writes it: claims follow the tags of migration 0009. Kept so that nothing reading it breaks.
CREATE TABLE queue_scheduler (
    queue             text PRIMARY KEY,
    current_weights   jsonb NOT NULL DEFAULT '{}'::jsonb,
    claims            bigint NOT NULL DEFAULT 0,
    updated_at        timestamptz NOT NULL DEFAULT now()
);

INSERT INTO ol_schema_migrations (version, name) VALUES (2, 'queue') ON CONFLICT (version) DO NOTHING;
