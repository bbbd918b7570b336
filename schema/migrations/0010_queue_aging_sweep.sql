-- n8n-nodes-operation-ledger, migration 0010: aging as a rate-limited sweep.
--
-- An aging step in every claim that moves Batch Size aged tasks to the head tag sends EVERY claim
-- of a backlog older than the aging interval down the full path (the next claim finds the rest
-- still behind and moves the next ones): claims of an old backlog then cost several times a young
-- one's (BENCHMARKS.md, "the aging cliff"). So each (queue, group) is swept at most once per
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
