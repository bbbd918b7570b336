-- Reserve a batch. p_items: [{"i": item index, "k": operation key, "f": fingerprint,
-- "a": fingerprint algorithm, "t": target or null, "r": request (json), "l": lease seconds}].
-- p_ctx: {"executionId", "workflowId", "nodeName"}. Items are handled in key order (so concurrent
-- batches lock rows in one order and cannot deadlock); one row is returned per item.
-- Outcomes: proceed | already_succeeded | in_progress | needs_reconcile | conflict | failed_permanently.
CREATE OR REPLACE FUNCTION reserve_operations(p_items jsonb, p_ctx jsonb)
RETURNS TABLE (
    idx integer, outcome text, status text, attempt integer, lease_token uuid,
    lease_expires_at timestamptz, idempotency_key text, external_ref text, response jsonb,
    response_truncated boolean, reason text, retryable boolean, created_at timestamptz,
    updated_at timestamptz
)
LANGUAGE plpgsql
SET search_path FROM CURRENT
AS $$
DECLARE
    it record;
    op operations%ROWTYPE;
    v_done integer[] := '{}';
BEGIN
    -- Phase 1, the common case: the first item of every key this batch names is inserted in one
    -- statement, in key order. INSERT ... ON CONFLICT DO NOTHING is the atomic decision: of any
    -- number of concurrent batches naming a new key, exactly one inserts it; the others wait for
    -- that insert to commit and then conflict. No check-then-insert.
    FOR it IN
        WITH items AS (
            SELECT DISTINCT ON (e->>'k') (e->>'i')::integer AS i, e->>'k' AS k, e->>'f' AS f,
                   e->>'a' AS a, e->>'t' AS t, e->'r' AS r, (e->>'l')::integer AS l
            FROM jsonb_array_elements(p_items) AS e
            ORDER BY e->>'k', (e->>'i')::integer
        ), ins AS (
            INSERT INTO operations AS o (operation_key, status, fingerprint, fingerprint_alg, target, request,
                                         attempt, idempotency_key, lease_token, lease_expires_at)
            SELECT items.k, 'reserved', items.f, items.a, items.t, items.r, 1, downstream_idempotency_key(items.k, 1),
                   gen_random_uuid(), now() + make_interval(secs => items.l)
            FROM items ORDER BY items.k
            ON CONFLICT (operation_key) DO NOTHING
            RETURNING o.operation_key, o.lease_token, o.lease_expires_at, o.idempotency_key, o.created_at, o.updated_at
        ), ev AS (
            INSERT INTO operation_events (operation_key, event, from_status, to_status, attempt, lease_token,
                                          execution_id, workflow_id, node_name, item_index)
            SELECT ins.operation_key, 'reserved', NULL, 'reserved', 1, ins.lease_token,
                   p_ctx->>'executionId', p_ctx->>'workflowId', p_ctx->>'nodeName', items.i
            FROM ins JOIN items ON items.k = ins.operation_key
        )
        SELECT items.i AS item, ins.lease_token AS tok, ins.lease_expires_at AS expires, ins.idempotency_key AS ikey,
               ins.created_at AS created, ins.updated_at AS updated
        FROM ins JOIN items ON items.k = ins.operation_key
    LOOP
        idx := it.item; outcome := 'proceed'; status := 'reserved'; attempt := 1;
        lease_token := it.tok; lease_expires_at := it.expires; idempotency_key := it.ikey;
        external_ref := NULL; response := NULL; response_truncated := false; reason := NULL;
        retryable := NULL; created_at := it.created; updated_at := it.updated;
        v_done := v_done || it.item;
        RETURN NEXT;
    END LOOP;

    -- Phase 2: keys that already existed, and repeats of a key within the batch, one at a time in
    -- key order (so concurrent batches lock rows in one order and cannot deadlock).
    FOR it IN
        SELECT (e->>'i')::integer AS i, e->>'k' AS k, e->>'f' AS f, e->>'a' AS a, e->>'t' AS t,
               e->'r' AS r, (e->>'l')::integer AS l
        FROM jsonb_array_elements(p_items) AS e
        LEFT JOIN unnest(v_done) AS d(i) ON d.i = (e->>'i')::integer
        WHERE d.i IS NULL
        ORDER BY e->>'k', (e->>'i')::integer
    LOOP
        idx := it.i;
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
            INSERT INTO operations AS o (operation_key, status, fingerprint, fingerprint_alg, target, request,
                                         attempt, idempotency_key, lease_token, lease_expires_at)
            VALUES (it.k, 'reserved', it.f, it.a, it.t, it.r, 1, downstream_idempotency_key(it.k, 1),
                    gen_random_uuid(), now() + make_interval(secs => it.l))
            ON CONFLICT (operation_key) DO NOTHING
            RETURNING o.* INTO op;
            IF FOUND THEN
                outcome := 'proceed';
                PERFORM append_event(op.operation_key, 'reserved', NULL, 'reserved', op.attempt, op.lease_token, p_ctx, it.i, NULL);
            ELSE
                -- The row exists (possibly committed by a concurrent batch a moment ago: this statement
                -- runs with a fresh snapshot). Lock it and decide from its current state.
                SELECT * INTO op FROM operations o WHERE o.operation_key = it.k FOR UPDATE;
                IF op.fingerprint <> it.f THEN
                    outcome := 'conflict';
                    PERFORM append_event(op.operation_key, 'conflict_rejected', op.status, op.status, op.attempt, NULL, p_ctx, it.i,
                                         jsonb_build_object('fingerprint', it.f));
                ELSIF op.status = 'succeeded' THEN
                    outcome := 'already_succeeded';
                ELSIF op.status = 'reserved' AND op.lease_expires_at > now() THEN
                    outcome := 'in_progress';
                ELSIF op.status = 'reserved' THEN
                    UPDATE operations o
                       SET status = 'unknown', reason = 'lease expired without a confirmation',
                           unknown_since = now(), next_check_at = now(), updated_at = now()
                     WHERE o.operation_key = op.operation_key AND o.status = 'reserved'
                    RETURNING o.* INTO op;
                    PERFORM append_event(op.operation_key, 'lease_expired', 'reserved', 'unknown', op.attempt, op.lease_token, p_ctx, it.i, NULL);
                    outcome := 'needs_reconcile';
                ELSIF op.status IN ('unknown', 'review') THEN
                    outcome := 'needs_reconcile';
                ELSIF op.status = 'failed' AND op.retryable THEN
                    UPDATE operations o
                       SET status = 'reserved', attempt = o.attempt + 1,
                           idempotency_key = downstream_idempotency_key(o.operation_key, o.attempt + 1),
                           lease_token = gen_random_uuid(), lease_expires_at = now() + make_interval(secs => it.l),
                           external_ref = NULL, response = NULL, response_truncated = false, reason = NULL,
                           retryable = NULL, unknown_since = NULL, reconcile_checks = 0, next_check_at = NULL,
                           settled_at = NULL, updated_at = now()
                     WHERE o.operation_key = op.operation_key AND o.status = 'failed' AND o.retryable
                    RETURNING o.* INTO op;
                    PERFORM append_event(op.operation_key, 'reserved', 'failed', 'reserved', op.attempt, op.lease_token, p_ctx, it.i,
                                         jsonb_build_object('retry', true));
                    outcome := 'proceed';
                ELSE
                    outcome := 'failed_permanently';
                END IF;
            END IF;
        END IF;
        -- A conflict learns nothing of the other request's operation.
        status := CASE WHEN outcome = 'conflict' THEN NULL ELSE op.status END;
        attempt := CASE WHEN outcome = 'conflict' THEN NULL ELSE op.attempt END;
        -- Only the new holder learns the lease token.
        lease_token := CASE WHEN outcome = 'proceed' THEN op.lease_token END;
        lease_expires_at := CASE WHEN outcome = 'conflict' THEN NULL ELSE op.lease_expires_at END;
        idempotency_key := CASE WHEN outcome = 'conflict' THEN NULL ELSE op.idempotency_key END;
        external_ref := CASE WHEN outcome = 'conflict' THEN NULL ELSE op.external_ref END;
        response := CASE WHEN outcome = 'already_succeeded' THEN op.response END;
        response_truncated := CASE WHEN outcome = 'conflict' THEN NULL ELSE op.response_truncated END;
        reason := CASE WHEN outcome = 'conflict' THEN NULL ELSE op.reason END;
        retryable := CASE WHEN outcome = 'conflict' THEN NULL ELSE op.retryable END;
        created_at := CASE WHEN outcome = 'conflict' THEN NULL ELSE op.created_at END;
        updated_at := CASE WHEN outcome = 'conflict' THEN NULL ELSE op.updated_at END;
        RETURN NEXT;
    END LOOP;
END $$;
