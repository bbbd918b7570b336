-- Reserve a batch. p_items: [{"i": item index, "k": operation key, "f": fingerprint,
-- "a": fingerprint algorithm, "t": target or null, "r": request (json), "l": lease seconds,
-- "s": settle window seconds (1 .. 2592000; default 120)}].
-- p_ctx: {"executionId", "workflowId", "nodeName"}. Items are handled in key order (so concurrent
-- batches lock rows in one order and cannot deadlock); one row is returned per item.
-- Outcomes: proceed | already_succeeded | in_progress | needs_reconcile | conflict |
-- failed_permanently | busy (the key's row stayed locked by another transaction for longer than
-- the caller's lock_timeout: nothing was changed for this item, the other items are unaffected;
-- running the item again is safe).
-- The lease token is returned to the new holder only; the row and the event log keep its hash.
-- The row also keeps the execution id the lease was granted to (lease_execution_id, migration 0011),
-- so confirm_operations can tell a write that ran again in another execution (n8n's Retry from the
-- failed node, a partial run in the editor) from the holder's own report.
-- Refused for the whole batch (SQLSTATE 22023, nothing written), as the node refuses it for the
-- item: a key, target, lease (whole seconds, 1 .. 604800) or settle window outside the node's rules
-- (src/ledger/validate.ts; ol_check_texts, ol_check_numbers), a fingerprint that is not 64 hex
-- digits.
-- Lock waits: one budget for the batch (ol_lock_deadline: about one lock_timeout in all, not one
-- per key), so keys held by other transactions answer busy within about one lock_timeout and the
-- other keys are still decided.
CREATE OR REPLACE FUNCTION reserve_operations(p_items jsonb, p_ctx jsonb)
RETURNS TABLE (
    idx integer, outcome text, status text, attempt integer, lease_token uuid,
    lease_expires_at timestamptz, idempotency_key text, external_ref text, response jsonb,
    response_truncated boolean, reason text, retryable boolean, created_at timestamptz,
    updated_at timestamptz
)
LANGUAGE plpgsql
SET search_path FROM CURRENT
-- A plan is kept per connection, and one made while the tables were small (or analysed small)
-- reads them sequentially for as long as the connection lives, even for a primary-key lookup:
-- sequential scans are priced out (docs/schema.md, "Plans kept from a small table"). JIT is off: a statement whose
-- only path is a scan would carry the priced-out cost and be compiled on every call.
SET enable_seqscan = off
SET jit = off
AS $$
DECLARE
    it record;
    op operations%ROWTYPE;
    v_now timestamptz := ledger_now();
    v_done integer[] := '{}';
    -- Phase 1's answers, one array per column (unnested into the result in one statement: no
    -- per-row document to build and parse again, no per-row assignments).
    v_toks uuid[];
    v_exps timestamptz[];
    v_ikeys text[];
    v_created timestamptz[];
    v_updated timestamptz[];
    v_tok uuid;
    v_lock_timeout text := current_setting('lock_timeout');
    v_deadline timestamptz := ol_lock_deadline();
BEGIN
    -- What the node refuses is refused here too (docs/security.md, "What a caller can pass").
    PERFORM ol_check_texts('the operation key', x.i, x.k, 'operation_key', 512),
            ol_check_texts('the target', x.i, x.t, 'target', 200),
            ol_check_numbers('the lease (seconds)', x.i, x.l, 1, 604800, true),
            ol_check_numbers('the settle window (seconds)', x.i, x.s, 1, 2592000, true)
      FROM (SELECT array_agg((e->>'i')::integer) AS i, array_agg(e->>'k') AS k, array_agg(e->>'t') AS t,
                   array_agg((e->>'l')::double precision) AS l, array_agg(coalesce((e->>'s')::double precision, 120)) AS s
              FROM jsonb_array_elements(p_items) AS e) x;
    -- (Lengths apart from the patterns: a bounded repeat such as {64} made this test 10 ms of a
    -- 1,000-item batch's 45, see queue_claim.sql.)
    IF EXISTS (SELECT 1 FROM jsonb_array_elements(p_items) AS e
                WHERE coalesce(e->>'f', '') !~ '^[0-9a-f]+$' OR length(e->>'f') <> 64
                   OR coalesce(e->>'a', '') !~ '^[a-z0-9-]+$' OR length(e->>'a') > 100) THEN
        RAISE EXCEPTION 'reserve_operations: every item needs "f", the SHA-256 fingerprint as 64 lowercase hex digits, and "a", its algorithm'
            USING ERRCODE = '22023';
    END IF;
    -- Phase 1, the common case: the first item of every key this batch names is inserted in one
    -- statement, in key order. INSERT ... ON CONFLICT DO NOTHING is the atomic decision: of any
    -- number of concurrent batches naming a new key, exactly one inserts it; the others wait for
    -- that insert to commit and then conflict. No check-then-insert. If that wait outlasts the
    -- lock_timeout, phase 1 is undone as a whole and every item goes through phase 2, where a
    -- blocked key answers busy on its own.
    BEGIN
        WITH items AS MATERIALIZED (
            SELECT DISTINCT ON (e->>'k') (e->>'i')::integer AS i, e->>'k' AS k, e->>'f' AS f,
                   e->>'a' AS a, e->>'t' AS t, e->'r' AS r, (e->>'l')::integer AS l,
                   coalesce((e->>'s')::integer, 120) AS s
            FROM jsonb_array_elements(p_items) AS e
            ORDER BY e->>'k', (e->>'i')::integer
        ), toks AS MATERIALIZED (
            SELECT items.*, gen_random_uuid() AS tok FROM items
        ), ins AS (
            INSERT INTO operations AS o (operation_key, status, fingerprint, fingerprint_alg, target, request,
                                         attempt, idempotency_key, lease_token_hash, lease_expires_at, settle_seconds,
                                         lease_execution_id)
            SELECT toks.k, 'reserved', toks.f, toks.a, toks.t, toks.r, 1, downstream_idempotency_key(toks.k, 1),
                   ledger_token_hash(toks.tok), v_now + make_interval(secs => toks.l), toks.s, p_ctx->>'executionId'
            FROM toks ORDER BY toks.k
            ON CONFLICT (operation_key) DO NOTHING
            RETURNING o.operation_key, o.lease_token_hash, o.lease_expires_at, o.idempotency_key, o.created_at, o.updated_at
        ), ev AS (
            INSERT INTO operation_events (operation_key, event, from_status, to_status, attempt, lease_token_hash,
                                          execution_id, workflow_id, node_name, item_index)
            SELECT ins.operation_key, 'reserved', NULL, 'reserved', 1, ins.lease_token_hash,
                   p_ctx->>'executionId', p_ctx->>'workflowId', p_ctx->>'nodeName', toks.i
            FROM ins JOIN toks ON toks.k = ins.operation_key
        )
        SELECT coalesce(array_agg(toks.i), '{}'), array_agg(toks.tok), array_agg(ins.lease_expires_at),
               array_agg(ins.idempotency_key), array_agg(ins.created_at), array_agg(ins.updated_at)
          INTO v_done, v_toks, v_exps, v_ikeys, v_created, v_updated
          FROM ins JOIN toks ON toks.k = ins.operation_key;
    EXCEPTION WHEN lock_not_available THEN
        -- Undone as a whole: nothing of phase 1 is answered, every item goes through phase 2.
        v_done := '{}';
    END;
    IF cardinality(v_done) > 0 THEN
        RETURN QUERY
            SELECT f.i, 'proceed'::text, 'reserved'::text, 1, f.tok, f.exp, f.ikey, NULL::text, NULL::jsonb, false,
                   NULL::text, NULL::boolean, f.created, f.updated
              FROM unnest(v_done, v_toks, v_exps, v_ikeys, v_created, v_updated) AS f(i, tok, exp, ikey, created, updated);
    END IF;
    -- Every item answered by phase 1 (the common case): no second pass over the batch.
    IF cardinality(v_done) = jsonb_array_length(p_items) THEN
        PERFORM set_config('lock_timeout', v_lock_timeout, true);
        RETURN;
    END IF;

    -- Phase 2: keys that already existed, and repeats of a key within the batch, one at a time in
    -- key order (so concurrent batches lock rows in one order and cannot deadlock).
    FOR it IN
        SELECT (e->>'i')::integer AS i, e->>'k' AS k, e->>'f' AS f, e->>'a' AS a, e->>'t' AS t,
               e->'r' AS r, (e->>'l')::integer AS l, coalesce((e->>'s')::integer, 120) AS s
        FROM jsonb_array_elements(p_items) AS e
        LEFT JOIN unnest(v_done) AS d(i) ON d.i = (e->>'i')::integer
        WHERE d.i IS NULL
        ORDER BY e->>'k', (e->>'i')::integer
    LOOP
        idx := it.i;
        v_tok := NULL;
        BEGIN
            -- Answers that change nothing need no row lock: a succeeded or permanently failed row never
            -- changes again, and unknown or review rows only move on evidence, which this item does not
            -- bring. Read them without locking, so replays dirty no page and write no WAL.
            SELECT * INTO op FROM operations o WHERE o.operation_key = it.k;
            IF FOUND AND (op.status IN ('succeeded', 'unknown', 'review') OR (op.status = 'failed' AND op.retryable IS FALSE)) THEN
                IF op.fingerprint <> it.f THEN
                    outcome := 'conflict';
                    PERFORM append_event(op.operation_key, 'conflict_rejected', op.status, op.status, op.attempt, NULL, p_ctx, it.i,
                                         jsonb_build_object('fingerprint', it.f));
                ELSIF op.status = 'succeeded' THEN
                    outcome := 'already_succeeded';
                ELSIF op.status = 'failed' THEN
                    outcome := 'failed_permanently';
                ELSE
                    outcome := 'needs_reconcile';
                END IF;
            ELSE
                -- The key may have vanished since phase 1 (a concurrent inserter rolled back): try again.
                -- Either statement below may wait (for an uncommitted insert of the key, or its row
                -- lock): each gets what is left of the batch's lock budget.
                PERFORM ol_lock_budget(v_deadline);
                v_tok := gen_random_uuid();
                INSERT INTO operations AS o (operation_key, status, fingerprint, fingerprint_alg, target, request,
                                             attempt, idempotency_key, lease_token_hash, lease_expires_at, settle_seconds,
                                             lease_execution_id)
                VALUES (it.k, 'reserved', it.f, it.a, it.t, it.r, 1, downstream_idempotency_key(it.k, 1),
                        ledger_token_hash(v_tok), v_now + make_interval(secs => it.l), it.s, p_ctx->>'executionId')
                ON CONFLICT (operation_key) DO NOTHING
                RETURNING o.* INTO op;
                IF FOUND THEN
                    outcome := 'proceed';
                    PERFORM append_event(op.operation_key, 'reserved', NULL, 'reserved', op.attempt, op.lease_token_hash, p_ctx, it.i, NULL);
                ELSE
                    v_tok := NULL;
                    -- The row exists (possibly committed by a concurrent batch a moment ago: this statement
                    -- runs with a fresh snapshot). Lock it and decide from its current state.
                    PERFORM ol_lock_budget(v_deadline);
                    SELECT * INTO op FROM operations o WHERE o.operation_key = it.k FOR UPDATE;
                    IF op.fingerprint <> it.f THEN
                        outcome := 'conflict';
                        PERFORM append_event(op.operation_key, 'conflict_rejected', op.status, op.status, op.attempt, NULL, p_ctx, it.i,
                                             jsonb_build_object('fingerprint', it.f));
                    ELSIF op.status = 'succeeded' THEN
                        outcome := 'already_succeeded';
                    ELSIF op.status = 'reserved' AND op.lease_expires_at > v_now THEN
                        outcome := 'in_progress';
                    ELSIF op.status = 'reserved' THEN
                        -- The lease ended unconfirmed: never re-reserved, it becomes unknown.
                        op := ledger_expire_lease(op.operation_key, v_now, p_ctx, it.i);
                        outcome := 'needs_reconcile';
                    ELSIF op.status IN ('unknown', 'review') THEN
                        outcome := 'needs_reconcile';
                    ELSIF op.status = 'failed' AND op.retryable THEN
                        v_tok := gen_random_uuid();
                        UPDATE operations o
                           SET status = 'reserved', attempt = o.attempt + 1,
                               idempotency_key = downstream_idempotency_key(o.operation_key, o.attempt + 1),
                               lease_token_hash = ledger_token_hash(v_tok), lease_expires_at = v_now + make_interval(secs => it.l),
                               lease_execution_id = p_ctx->>'executionId',
                               settle_seconds = it.s, settle_until = NULL, claimed_at = NULL,
                               external_ref = NULL, response = NULL, response_truncated = false, reason = NULL,
                               retryable = NULL, unknown_since = NULL, reconcile_checks = 0, next_check_at = NULL,
                               settled_at = NULL, updated_at = v_now
                         -- status || '': by primary key only, never operations_failed_idx (see
                         -- confirm_operations, the plan kept from a small table).
                         WHERE o.operation_key = op.operation_key AND o.status || '' = 'failed' AND o.retryable
                        RETURNING o.* INTO op;
                        PERFORM append_event(op.operation_key, 'reserved', 'failed', 'reserved', op.attempt, op.lease_token_hash, p_ctx, it.i,
                                             jsonb_build_object('retry', true));
                        outcome := 'proceed';
                    ELSE
                        outcome := 'failed_permanently';
                    END IF;
                END IF;
            END IF;
        EXCEPTION WHEN lock_not_available THEN
            -- Another transaction holds this key's row (or an uncommitted insert of it) for longer
            -- than lock_timeout. Nothing of this item was changed (the block's subtransaction was
            -- undone); the other items carry on.
            idx := it.i; outcome := 'busy'; status := NULL; attempt := NULL; lease_token := NULL;
            lease_expires_at := NULL; idempotency_key := NULL; external_ref := NULL; response := NULL;
            response_truncated := NULL; reason := 'the operation key is locked by another transaction; nothing was recorded for this item, running it again is safe';
            retryable := true; created_at := NULL; updated_at := NULL;
            RETURN NEXT;
            CONTINUE;
        END;
        -- A conflict learns the key's status and attempt (so the operator can see what the key is
        -- used for) and why it was refused, nothing of the other request: no reference, response,
        -- idempotency key or fingerprint.
        status := op.status;
        attempt := op.attempt;
        -- Only the new holder learns the lease token.
        lease_token := CASE WHEN outcome = 'proceed' THEN v_tok END;
        -- A settled row's lease is over and means nothing to the caller.
        lease_expires_at := CASE WHEN outcome IN ('conflict', 'already_succeeded', 'failed_permanently') THEN NULL ELSE op.lease_expires_at END;
        idempotency_key := CASE WHEN outcome = 'conflict' THEN NULL ELSE op.idempotency_key END;
        external_ref := CASE WHEN outcome = 'conflict' THEN NULL ELSE op.external_ref END;
        response := CASE WHEN outcome = 'already_succeeded' THEN op.response END;
        response_truncated := CASE WHEN outcome = 'conflict' THEN NULL ELSE op.response_truncated END;
        reason := CASE WHEN outcome = 'conflict'
                       THEN 'the operation key was already used with a different request (the request fingerprints differ); this request was not reserved. Use a new key for a new request.'
                       ELSE op.reason END;
        retryable := CASE WHEN outcome = 'conflict' THEN NULL ELSE op.retryable END;
        created_at := CASE WHEN outcome = 'conflict' THEN NULL ELSE op.created_at END;
        updated_at := CASE WHEN outcome = 'conflict' THEN NULL ELSE op.updated_at END;
        RETURN NEXT;
    END LOOP;
    PERFORM set_config('lock_timeout', v_lock_timeout, true);
END $$;
