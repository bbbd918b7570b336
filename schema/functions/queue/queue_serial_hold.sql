-- Before a statement that may move tasks p_ids out of queue_tasks (complete, cancel, settle by id,
-- the end of a cancel-requested lease): take the serial-key lock (queue_serial_lock) of every serial
-- key among those tasks, sorted by lock key, waiting for each (bounded by the caller's lock_timeout).
-- Keys first, then rows, in one global order: a transaction holding a task row never waits for a
-- key while another holding the key waits for that row (an operator's Cancel or Settle by ID of a
-- blocked task beside its head's Complete). A task's serial key never changes, so reading it without
-- the row lock is exact. Returns whether any task of p_ids has a serial key (false: no lock taken,
-- nothing to promote). Not an entry point.
CREATE OR REPLACE FUNCTION queue_serial_hold(p_ids bigint[]) RETURNS boolean
LANGUAGE plpgsql
SET search_path FROM CURRENT
-- A plan is kept per connection, and one made while the tables were small (or analysed small)
-- reads them sequentially for as long as the connection lives, even for a primary-key lookup:
-- sequential scans are priced out (docs/queue.md, "Scale"). JIT is off: a statement whose
-- only path is a scan would carry the priced-out cost and be compiled on every call.
SET enable_seqscan = off
SET jit = off
AS $$
DECLARE
    v_n integer;
BEGIN
    SELECT count(*) INTO v_n
      FROM (SELECT pg_advisory_xact_lock(k.lk)
              -- Each id is looked up by primary key alone (LIMIT 1: a per-id lookup the planner
              -- cannot flatten; the key test stays outside it, so the partial serial-key index,
              -- whose leading columns are not the id, never qualifies). Written as one scan with
              -- t.id = ANY (p_ids), statistics taken when few tasks had a key made the planner
              -- read the whole serial-key index and test every entry against every id.
              FROM (SELECT DISTINCT queue_serial_lock(t.queue, t.serial_key) AS lk
                      FROM unnest(p_ids) AS u(id)
                     CROSS JOIN LATERAL (SELECT x.queue, x.serial_key FROM queue_tasks x
                                          WHERE x.id = u.id LIMIT 1) t
                     WHERE t.serial_key IS NOT NULL) k
             ORDER BY k.lk) l;
    RETURN v_n > 0;
END $$;
