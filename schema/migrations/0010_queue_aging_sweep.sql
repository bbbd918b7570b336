-- n8n-nodes-operation-ledger, migration 0010: aging as a rate-limited sweep (issue 15).
--
-- Before this, a backlog older than the aging interval sent EVERY claim down the full path (its
-- aging step moved Batch Size aged tasks to the head tag, so the next claim found the rest still
-- behind and moved the next ones): claims of an old backlog cost several times a young one's
-- (BENCHMARKS.md, section 3b, "Third follow-up"). Now each (queue, group) is swept at most once per
-- sweep gap (a tenth of the claim's aging interval, at most 1 s), and a sweep moves up to
-- max(Batch Size, 1000) of the oldest aged tasks at once; between sweeps the fast path serves them
-- from the head. docs/queue.md ("Aging") has the rule and its bound.
--
--   queue_group_weights.aging_swept_at   when a claim last swept this group's aged tasks (null:
--                                        never). Written only by a sweep, which locks the row with
--                                        FOR NO KEY UPDATE SKIP LOCKED (enqueue reads the row and
--                                        never waits for it; two claims never sweep one group at once).

SET search_path TO :"schema";

ALTER TABLE queue_group_weights ADD COLUMN IF NOT EXISTS aging_swept_at timestamptz;

INSERT INTO ol_schema_migrations (version, name) VALUES (10, 'queue_aging_sweep') ON CONFLICT (version) DO NOTHING;
