-- n8n-nodes-operation-ledger, migration 0009: weighted fairness decided at enqueue (start-time fair
-- queuing tags), so that a claim is a plain ordered FOR UPDATE SKIP LOCKED over one index and
-- concurrent claims of a queue overlap instead of waiting for each other. The model, with a worked example, is in
-- docs/queue.md ("Scheduling").
--
--   queue_tasks.vtag      the task's virtual start time. A pending task with a tag is claimable
--                         (once run_at has come) in (vtag, id) order. Null: not tagged yet (a task
--                         enqueued with a delay, tagged by the first claim after it is due).
--   queue_group_tags      one row per (queue, group): the group's last tag handed out. Enqueue (and
--                         the tagging of due delayed tasks) locks it for the batch:
--                         next tag = max(queue virtual time, last tag) + 1 / weight.
--   queue_group_weights   one row per (queue, group): the weight a Dequeue last claimed with. Enqueue
--                         reads it (never locks it); a claim writes it only when its weights differ.
--   queue_claim_seq       claim sequence numbers (claim_seq): increasing, one per claimed task; unlike
--                         the old scheduler counter it may have gaps (no shared row per claim).
--
-- queue_scheduler (migration 0002) is no longer written; it is kept so that nothing that reads it
-- breaks.

SET search_path TO :"schema";

ALTER TABLE queue_tasks ADD COLUMN IF NOT EXISTS vtag double precision;

CREATE TABLE IF NOT EXISTS queue_group_tags (
    queue             text NOT NULL,
    priority_group    text NOT NULL,
    last_tag          double precision NOT NULL DEFAULT 0,
    updated_at        timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (queue, priority_group)
);

CREATE TABLE IF NOT EXISTS queue_group_weights (
    queue             text NOT NULL,
    priority_group    text NOT NULL,
    weight            integer NOT NULL CHECK (weight >= 1),
    updated_at        timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (queue, priority_group)
);

CREATE SEQUENCE IF NOT EXISTS queue_claim_seq;

-- Tasks pending at upgrade time: tagged FIFO per group with the default weights (high 5, normal 2,
-- low 1, others 1) from virtual time 0, and each group's last tag recorded. Delayed tasks stay
-- untagged (the first claim after they are due tags them).
WITH r AS (
    SELECT t.id, t.queue, t.priority_group,
           row_number() OVER (PARTITION BY t.queue, t.priority_group ORDER BY t.run_at, t.id)::double precision
             / CASE t.priority_group WHEN 'high' THEN 5 WHEN 'normal' THEN 2 ELSE 1 END AS tag
      FROM queue_tasks t
     WHERE t.status = 'pending' AND t.vtag IS NULL AND t.run_at <= now()
), u AS (
    UPDATE queue_tasks t SET vtag = r.tag FROM r WHERE t.id = r.id RETURNING t.queue, t.priority_group, t.vtag
)
INSERT INTO queue_group_tags (queue, priority_group, last_tag)
SELECT u.queue, u.priority_group, max(u.vtag) FROM u GROUP BY u.queue, u.priority_group
ON CONFLICT (queue, priority_group) DO UPDATE SET last_tag = greatest(queue_group_tags.last_tag, excluded.last_tag);

-- The claim's order: pending tagged tasks of a queue by (vtag, id).
CREATE INDEX IF NOT EXISTS queue_tasks_tag_idx ON queue_tasks (queue, vtag, id)
    WHERE status = 'pending' AND vtag IS NOT NULL;
-- Untagged pending tasks by due time (found by the claim's probe once due).
CREATE INDEX IF NOT EXISTS queue_tasks_untagged_idx ON queue_tasks (queue, run_at, id)
    WHERE status = 'pending' AND vtag IS NULL;

INSERT INTO ol_schema_migrations (version, name) VALUES (9, 'queue_fair_tags') ON CONFLICT (version) DO NOTHING;
