-- Confirm a batch. p_items: [{"i": item index, "k": operation key, "tok": lease token,
-- "o": "succeeded" | "failed" | "unknown", "ref": external reference, "resp": response (json),
-- "trunc": response truncated?, "reason": text, "retry": retryable? (failed only)}].
-- Results: recorded | repeated (same confirmation again, harmless) | stale (lease token is not the
-- holder's, or the row is already settled differently: recorded as an event, row untouched) |
-- not_found | busy (the row stayed locked by another transaction for longer than lock_timeout;
-- nothing was recorded for this item, the other items are unaffected, sending it again is safe).
-- possible_duplicate is set when a stale report says the write succeeded but the row does not hold
-- that success (the row keeps the mark too: possible_duplicate_at, migration 0011), and when a
-- success is reported by another execution than the one the lease was granted to. Tokens are
-- compared by ledger_token_hash(); no event stores a token.
-- Another execution (p_ctx executionId differs from the row's lease_execution_id; both known):
-- n8n re-ran the write from a stored Proceed item (Retry from the failed node, a partial run in the
-- editor), so the lease's own execution may have sent it too and its outcome was never reported.
--   reported succeeded          -> review, flagged possible_duplicate_at, the reference and response
--                                  kept; event 'possible_duplicate'. A person checks the target
--                                  (Operation Ledger Admin: List Possible Duplicates, Settle by Hand).
--   reported failed or unknown  -> unknown (as a report of unknown would; the first execution's
--                                  write may have taken effect), event 'confirmed_unknown' with
--                                  {"otherExecution": true, "reported": ...}; if the row is unknown
--                                  already: result repeated, event 'other_execution_report'.
-- p_ctx may carry "executionMode" (n8n's mode: retry, manual, ...), recorded in those events.
-- Going unknown starts the operation's settle window: settle_until = now + settle_seconds, when
-- the holder reports unknown while its lease is live. Reported after the lease ended, the row goes
-- unknown through ledger_expire_lease (unknown_since = lease end, window from the lease end: the
-- same row as when Reserve or a reconcile claim sees the expiry first) and the report is an event.
-- Refused for the whole batch (SQLSTATE 22023, nothing written), as the node refuses it for the
-- item: a key outside the node's rules, an outcome other than the three, a reference over 1000 or
-- a reason over 2000 characters (UTF-16 code units).
-- Lock waits: one budget for the batch (ol_lock_deadline), so held keys answer busy within about
-- one lock_timeout in all and the other keys are decided. Rows are locked in key order throughout
-- (never skipped while earlier ones are held), so concurrent Reserves and Confirms cannot deadlock.
CREATE OR REPLACE FUNCTION confirm_operations(p_items jsonb, p_ctx jsonb)
RETURNS TABLE (
    idx integer, result text, status text, attempt integer, external_ref text, late boolean,
    possible_duplicate boolean, updated_at timestamptz
)
LANGUAGE plpgsql
SET search_path FROM CURRENT
-- Every statement below finds its rows by primary key. PL/pgSQL keeps a statement's plan for the
-- connection, and a plan made while the table was small joined phase 1's UPDATE to a sequential
-- scan of the whole table (a hash join: cheaper than 100 index probes at a few thousand rows); kept
-- while the table grew, that scan cost each batch more with every row stored (a 1,000-item Confirm
-- against 100,000 rows: tens of milliseconds, until an ANALYZE made the plan again). With scans,
-- hash and merge joins priced out the UPDATE probes the primary key once per locked row whatever
-- the statistics said when the plan was made.
SET enable_seqscan = off
-- JIT off: a statement whose only path is a scan would carry the priced-out cost and be compiled on every call.
SET jit = off
SET enable_hashjoin = off
SET enable_mergejoin = off
AS $$
DECLARE
    it record;
    op operations%ROWTYPE;
    v_now timestamptz := ledger_now();
    v_from text;
    v_hash bytea;
    v_other boolean;
    v_exec text := p_ctx->>'executionId';
    v_done integer[] := '{}';
    -- Phase 1's answers, one array per column (unnested into the result in one statement).
    v_sts text[];
    v_atts integer[];
    v_refs text[];
    v_updated timestamptz[];
    v_lock_timeout text := current_setting('lock_timeout');
    v_deadline timestamptz := ol_lock_deadline();
BEGIN
    -- What the node refuses is refused here too (docs/security.md, "What a caller can pass").
    PERFORM ol_check_texts('the operation key', x.i, x.k, 'operation_key', 512),
            ol_check_texts('the external reference', x.i, x.ref, 'text', 1000),
            ol_check_texts('the reason', x.i, x.why, 'text', 2000)
      FROM (SELECT array_agg((e->>'i')::integer) AS i, array_agg(e->>'k') AS k, array_agg(e->>'ref') AS ref,
                   array_agg(e->>'reason') AS why
              FROM jsonb_array_elements(p_items) AS e) x;
    IF EXISTS (SELECT 1 FROM jsonb_array_elements(p_items) AS e WHERE coalesce(e->>'o', '') NOT IN ('succeeded', 'failed', 'unknown')) THEN
        RAISE EXCEPTION 'confirm_operations: every item''s outcome "o" must be succeeded, failed or unknown' USING ERRCODE = '22023';
    END IF;
    -- Phase 1, the common case: the holder of a live lease reports an outcome. All such items are
    -- applied in one statement; rows are locked in key order first. If a lock wait outlasts the
    -- batch's budget (lock_timeout at the start), phase 1 is undone as a whole and every item goes
    -- through phase 2, where what is left of the budget (at least 1 ms per key) lets held keys
    -- answer busy and the others be recorded. (Skipping held rows here instead would hold later
    -- keys while waiting for an earlier one in phase 2: out of key order, a deadlock with a
    -- concurrent Reserve.)
    BEGIN
        WITH items AS MATERIALIZED (
            SELECT DISTINCT ON (e->>'k') (e->>'i')::integer AS i, e->>'k' AS k, (e->>'tok')::uuid AS tok,
                   ledger_token_hash((e->>'tok')::uuid) AS th,
                   e->>'o' AS o, e->>'ref' AS ref, e->'resp' AS resp,
                   coalesce((e->>'trunc')::boolean, false) AS trunc, e->>'reason' AS why,
                   coalesce((e->>'retry')::boolean, false) AS retry
            FROM jsonb_array_elements(p_items) AS e
            ORDER BY e->>'k', (e->>'i')::integer
        ), locked AS (
            -- Driven from the items: each one looks its row up by primary key (LIMIT 1 keeps the
            -- lookup a per-item index scan the planner cannot flatten into a join, so statistics
            -- taken when few rows were reserved cannot turn it into a scan of the reserved rows
            -- joined to every item). items is in key order, so rows are locked in key order.
            SELECT items.*, l.operation_key
              FROM items
             CROSS JOIN LATERAL (
                -- status || '' (not status): a test no partial index's predicate (status = ...)
                -- follows from, so the primary key is the only index this lookup can use. A plan
                -- made while the table was small once read operations_reserved_lease_idx instead,
                -- every reserved row once per item, and kept that plan as reserved rows piled up.
                SELECT o.operation_key FROM operations o
                 WHERE o.operation_key = items.k
                   AND o.status || '' = 'reserved' AND o.lease_token_hash = items.th AND o.lease_expires_at > v_now
                   -- A report from another execution than the lease's goes through phase 2.
                   AND NOT (o.lease_execution_id IS NOT NULL AND p_ctx->>'executionId' IS NOT NULL
                            AND o.lease_execution_id <> p_ctx->>'executionId')
                 LIMIT 1
                 FOR UPDATE OF o
             ) l
        ), upd AS (
            UPDATE operations o
               SET status = locked.o,
                   external_ref = CASE WHEN locked.o = 'succeeded' THEN locked.ref ELSE o.external_ref END,
                   response = CASE WHEN locked.o = 'unknown' THEN o.response ELSE locked.resp END,
                   response_truncated = CASE WHEN locked.o = 'unknown' THEN o.response_truncated ELSE locked.trunc END,
                   reason = CASE WHEN locked.o = 'succeeded' THEN NULL ELSE locked.why END,
                   retryable = CASE WHEN locked.o = 'failed' THEN locked.retry END,
                   unknown_since = CASE WHEN locked.o = 'unknown' THEN v_now ELSE o.unknown_since END,
                   settle_until = CASE WHEN locked.o = 'unknown' THEN v_now + make_interval(secs => o.settle_seconds) ELSE o.settle_until END,
                   next_check_at = CASE WHEN locked.o = 'unknown' THEN v_now END,
                   settled_at = CASE WHEN locked.o = 'unknown' THEN NULL ELSE v_now END,
                   updated_at = v_now
              FROM locked
             WHERE o.operation_key = locked.operation_key
            RETURNING locked.i AS item, o.operation_key AS okey, o.status AS st, o.attempt AS att,
                      o.external_ref AS ref, o.updated_at AS updated, locked.th AS th, locked.ref AS iref,
                      locked.why AS why, locked.retry AS retry, locked.trunc AS trunc, o.settle_until AS su
        ), ev AS (
            INSERT INTO operation_events (operation_key, event, from_status, to_status, attempt, lease_token_hash,
                                          execution_id, workflow_id, node_name, item_index, detail)
            SELECT upd.okey, 'confirmed_' || upd.st, 'reserved', upd.st, upd.att, upd.th,
                   p_ctx->>'executionId', p_ctx->>'workflowId', p_ctx->>'nodeName', upd.item,
                   CASE WHEN upd.st = 'unknown' THEN jsonb_build_object('reason', upd.why, 'settleUntil', upd.su)
                        ELSE jsonb_build_object('externalRef', upd.iref, 'reason', upd.why, 'retryable', upd.retry,
                                                'late', false, 'responseTruncated', upd.trunc) END
            FROM upd
        )
        SELECT coalesce(array_agg(upd.item), '{}'), array_agg(upd.st), array_agg(upd.att), array_agg(upd.ref),
               array_agg(upd.updated)
          INTO v_done, v_sts, v_atts, v_refs, v_updated
          FROM upd;
    EXCEPTION WHEN lock_not_available THEN
        -- Undone as a whole: nothing of phase 1 is answered, every item goes through phase 2.
        v_done := '{}';
    END;
    IF cardinality(v_done) > 0 THEN
        RETURN QUERY
            SELECT f.i, 'recorded'::text, f.st, f.att, f.ref, false, false, f.updated
              FROM unnest(v_done, v_sts, v_atts, v_refs, v_updated) AS f(i, st, att, ref, updated);
    END IF;
    -- Every item answered by phase 1 (the common case): no second pass over the batch.
    IF cardinality(v_done) = jsonb_array_length(p_items) THEN
        PERFORM set_config('lock_timeout', v_lock_timeout, true);
        RETURN;
    END IF;

    -- Phase 2: everything else (late, repeated, stale, unknown keys, repeats within the batch), one
    -- item at a time in key order.
    FOR it IN
        SELECT (e->>'i')::integer AS i, e->>'k' AS k, (e->>'tok')::uuid AS tok, e->>'o' AS o,
               e->>'ref' AS ref, e->'resp' AS resp, coalesce((e->>'trunc')::boolean, false) AS trunc,
               e->>'reason' AS reason, coalesce((e->>'retry')::boolean, false) AS retry
        FROM jsonb_array_elements(p_items) AS e
        LEFT JOIN unnest(v_done) AS d(i) ON d.i = (e->>'i')::integer
        WHERE d.i IS NULL
        ORDER BY e->>'k', (e->>'i')::integer
    LOOP
        idx := it.i;
        late := false;
        possible_duplicate := false;
        v_hash := ledger_token_hash(it.tok);
        BEGIN
            PERFORM ol_lock_budget(v_deadline);
            SELECT * INTO op FROM operations o WHERE o.operation_key = it.k FOR UPDATE;
            IF NOT FOUND THEN
                result := 'not_found';
                status := NULL; attempt := NULL; external_ref := NULL; updated_at := NULL;
                RETURN NEXT;
                CONTINUE;
            END IF;
            v_from := op.status;
            v_other := op.lease_execution_id IS NOT NULL AND v_exec IS NOT NULL AND op.lease_execution_id <> v_exec;
            IF op.lease_token_hash = v_hash AND op.status IN ('reserved', 'unknown') AND v_other THEN
                -- The write ran again in another execution, on the Proceed item of the lease's own
                -- execution, whose outcome was never reported: it may have been sent twice.
                IF op.status = 'reserved' AND op.lease_expires_at <= v_now THEN
                    op := ledger_expire_lease(op.operation_key, v_now, p_ctx, it.i);
                    v_from := 'unknown';
                    late := true;
                END IF;
                IF it.o = 'succeeded' THEN
                    UPDATE operations o
                       SET status = 'review', external_ref = it.ref, response = it.resp, response_truncated = it.trunc,
                           reason = format('possible duplicate: execution %s (mode %s) reported the write succeeded on the lease granted to execution %s, which may have sent it too; check the target for more than one write, then settle by hand',
                                           v_exec, coalesce(p_ctx->>'executionMode', 'unknown'), o.lease_execution_id),
                           possible_duplicate_at = coalesce(o.possible_duplicate_at, v_now),
                           unknown_since = coalesce(o.unknown_since, v_now), next_check_at = NULL,
                           claim_token_hash = NULL, claim_expires_at = NULL, claimed_at = NULL, updated_at = v_now
                     WHERE o.operation_key = op.operation_key
                    RETURNING o.* INTO op;
                    possible_duplicate := true;
                    PERFORM append_event(op.operation_key, 'possible_duplicate', v_from, 'review', op.attempt, v_hash, p_ctx, it.i,
                                         jsonb_build_object('reported', it.o, 'externalRef', it.ref, 'leaseExecutionId', op.lease_execution_id,
                                                            'executionMode', p_ctx->>'executionMode', 'late', late,
                                                            'responseTruncated', it.trunc));
                    result := 'recorded';
                ELSIF op.status = 'reserved' THEN
                    UPDATE operations o
                       SET status = 'unknown',
                           reason = format('execution %s reported %s on the lease granted to execution %s, which may have sent the write: its outcome is unknown%s',
                                           v_exec, it.o, o.lease_execution_id, coalesce(' (' || it.reason || ')', '')),
                           unknown_since = v_now, settle_until = v_now + make_interval(secs => o.settle_seconds),
                           next_check_at = v_now, updated_at = v_now
                     WHERE o.operation_key = op.operation_key
                    RETURNING o.* INTO op;
                    PERFORM append_event(op.operation_key, 'confirmed_unknown', v_from, 'unknown', op.attempt, v_hash, p_ctx, it.i,
                                         jsonb_build_object('reason', op.reason, 'settleUntil', op.settle_until, 'otherExecution', true,
                                                            'reported', it.o, 'leaseExecutionId', op.lease_execution_id,
                                                            'executionMode', p_ctx->>'executionMode'));
                    result := 'recorded';
                ELSE
                    PERFORM append_event(op.operation_key, 'other_execution_report', op.status, op.status, op.attempt, v_hash, p_ctx, it.i,
                                         jsonb_build_object('reported', it.o, 'reason', it.reason, 'leaseExecutionId', op.lease_execution_id,
                                                            'executionMode', p_ctx->>'executionMode'));
                    result := CASE WHEN late THEN 'recorded' ELSE 'repeated' END;
                END IF;
            ELSIF op.lease_token_hash = v_hash AND op.status IN ('reserved', 'unknown') THEN
                IF it.o = 'unknown' THEN
                    IF op.status = 'unknown' THEN
                        result := 'repeated';
                    ELSIF op.lease_expires_at <= v_now THEN
                        -- Late: the lease ended before this report. The row becomes unknown as of the
                        -- lease's end, exactly as if Reserve or a reconcile claim had seen the expiry
                        -- first (then this report would be a repeat); the report itself is recorded
                        -- as an event, flagged late.
                        op := ledger_expire_lease(op.operation_key, v_now, p_ctx, it.i);
                        late := true;
                        PERFORM append_event(op.operation_key, 'confirmed_unknown', 'unknown', 'unknown', op.attempt, v_hash, p_ctx, it.i,
                                             jsonb_build_object('reason', it.reason, 'settleUntil', op.settle_until, 'late', true));
                        result := 'recorded';
                    ELSE
                        UPDATE operations o
                           SET status = 'unknown', reason = it.reason, unknown_since = v_now,
                               settle_until = v_now + make_interval(secs => o.settle_seconds),
                               next_check_at = v_now, updated_at = v_now
                         WHERE o.operation_key = op.operation_key
                        RETURNING o.* INTO op;
                        PERFORM append_event(op.operation_key, 'confirmed_unknown', v_from, 'unknown', op.attempt, v_hash, p_ctx, it.i,
                                             jsonb_build_object('reason', it.reason, 'settleUntil', op.settle_until));
                        result := 'recorded';
                    END IF;
                ELSE
                    late := op.status = 'unknown' OR op.lease_expires_at <= v_now;
                    UPDATE operations o
                       SET status = it.o,
                           external_ref = CASE WHEN it.o = 'succeeded' THEN it.ref ELSE o.external_ref END,
                           response = it.resp, response_truncated = it.trunc,
                           reason = CASE WHEN it.o = 'failed' THEN it.reason END,
                           retryable = CASE WHEN it.o = 'failed' THEN it.retry END,
                           settled_at = v_now, updated_at = v_now, next_check_at = NULL
                     WHERE o.operation_key = op.operation_key
                    RETURNING o.* INTO op;
                    PERFORM append_event(op.operation_key, 'confirmed_' || it.o, v_from, it.o, op.attempt, v_hash, p_ctx, it.i,
                                         jsonb_build_object('externalRef', it.ref, 'reason', it.reason, 'retryable', it.retry,
                                                            'late', late, 'responseTruncated', it.trunc));
                    result := 'recorded';
                END IF;
            ELSIF op.lease_token_hash = v_hash AND op.status = it.o
                  AND (it.o <> 'succeeded' OR op.external_ref IS NOT DISTINCT FROM it.ref) THEN
                result := 'repeated';
            ELSE
                possible_duplicate := it.o = 'succeeded'
                    AND (op.status <> 'succeeded' OR op.external_ref IS DISTINCT FROM it.ref);
                -- The event keeps the hash of the token that was presented, never the holder's token.
                PERFORM append_event(op.operation_key, 'stale_confirmation', op.status, op.status, op.attempt, v_hash, p_ctx, it.i,
                                     jsonb_build_object('reported', it.o, 'externalRef', it.ref, 'reason', it.reason,
                                                        'possibleDuplicate', possible_duplicate,
                                                        'executionMode', p_ctx->>'executionMode'));
                -- The row keeps the mark, so an operator can list it; its status stays as it was.
                IF possible_duplicate AND op.possible_duplicate_at IS NULL THEN
                    UPDATE operations o SET possible_duplicate_at = v_now WHERE o.operation_key = op.operation_key
                    RETURNING o.* INTO op;
                END IF;
                result := 'stale';
            END IF;
        EXCEPTION WHEN lock_not_available THEN
            result := 'busy'; status := NULL; attempt := NULL; external_ref := NULL; updated_at := NULL;
            late := false; possible_duplicate := false;
            RETURN NEXT;
            CONTINUE;
        END;
        -- The row as this call leaves it.
        SELECT op.status, op.attempt, op.external_ref, op.updated_at INTO status, attempt, external_ref, updated_at;
        RETURN NEXT;
    END LOOP;
    PERFORM set_config('lock_timeout', v_lock_timeout, true);
END $$;
