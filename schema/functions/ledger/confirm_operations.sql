-- Confirm a batch. p_items: [{"i": item index, "k": operation key, "tok": lease token,
-- "o": "succeeded" | "failed" | "unknown", "ref": external reference, "resp": response (json),
-- "trunc": response truncated?, "reason": text, "retry": retryable? (failed only)}].
-- Results: recorded | repeated (same confirmation again, harmless) | stale (lease token is not the
-- holder's, or the row is already settled differently: recorded as an event, row untouched) |
-- not_found. possible_duplicate is set when a stale report says the write succeeded but the row
-- does not hold that success.
CREATE OR REPLACE FUNCTION confirm_operations(p_items jsonb, p_ctx jsonb)
RETURNS TABLE (
    idx integer, result text, status text, attempt integer, external_ref text, late boolean,
    possible_duplicate boolean, updated_at timestamptz
)
LANGUAGE plpgsql
SET search_path FROM CURRENT
AS $$
DECLARE
    it record;
    op operations%ROWTYPE;
    v_from text;
    v_done integer[] := '{}';
BEGIN
    -- Phase 1, the common case: the holder of a live lease reports an outcome. All such items are
    -- applied in one statement; rows are locked in key order first.
    FOR it IN
        WITH items AS (
            SELECT DISTINCT ON (e->>'k') (e->>'i')::integer AS i, e->>'k' AS k, (e->>'tok')::uuid AS tok,
                   e->>'o' AS o, e->>'ref' AS ref, e->'resp' AS resp,
                   coalesce((e->>'trunc')::boolean, false) AS trunc, e->>'reason' AS why,
                   coalesce((e->>'retry')::boolean, false) AS retry
            FROM jsonb_array_elements(p_items) AS e
            ORDER BY e->>'k', (e->>'i')::integer
        ), locked AS (
            SELECT o.operation_key FROM operations o JOIN items ON items.k = o.operation_key
             WHERE o.status = 'reserved' AND o.lease_token = items.tok AND o.lease_expires_at > now()
             ORDER BY o.operation_key
             FOR UPDATE OF o
        ), upd AS (
            UPDATE operations o
               SET status = items.o,
                   external_ref = CASE WHEN items.o = 'succeeded' THEN items.ref ELSE o.external_ref END,
                   response = CASE WHEN items.o = 'unknown' THEN o.response ELSE items.resp END,
                   response_truncated = CASE WHEN items.o = 'unknown' THEN o.response_truncated ELSE items.trunc END,
                   reason = CASE WHEN items.o = 'succeeded' THEN NULL ELSE items.why END,
                   retryable = CASE WHEN items.o = 'failed' THEN items.retry END,
                   unknown_since = CASE WHEN items.o = 'unknown' THEN now() ELSE o.unknown_since END,
                   next_check_at = CASE WHEN items.o = 'unknown' THEN now() END,
                   settled_at = CASE WHEN items.o = 'unknown' THEN NULL ELSE now() END,
                   updated_at = now()
              FROM items, locked
             WHERE o.operation_key = locked.operation_key AND items.k = locked.operation_key
            RETURNING items.i AS item, o.operation_key AS okey, o.status AS st, o.attempt AS att,
                      o.external_ref AS ref, o.updated_at AS updated, items.tok AS tok, items.ref AS iref,
                      items.why AS why, items.retry AS retry, items.trunc AS trunc
        ), ev AS (
            INSERT INTO operation_events (operation_key, event, from_status, to_status, attempt, lease_token,
                                          execution_id, workflow_id, node_name, item_index, detail)
            SELECT upd.okey, 'confirmed_' || upd.st, 'reserved', upd.st, upd.att, upd.tok,
                   p_ctx->>'executionId', p_ctx->>'workflowId', p_ctx->>'nodeName', upd.item,
                   CASE WHEN upd.st = 'unknown' THEN jsonb_build_object('reason', upd.why)
                        ELSE jsonb_build_object('externalRef', upd.iref, 'reason', upd.why, 'retryable', upd.retry,
                                                'late', false, 'responseTruncated', upd.trunc) END
            FROM upd
        )
        SELECT upd.item, upd.st, upd.att, upd.ref, upd.updated FROM upd
    LOOP
        idx := it.item; result := 'recorded'; status := it.st; attempt := it.att;
        external_ref := it.ref; late := false; possible_duplicate := false; updated_at := it.updated;
        v_done := v_done || it.item;
        RETURN NEXT;
    END LOOP;

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
        SELECT * INTO op FROM operations o WHERE o.operation_key = it.k FOR UPDATE;
        IF NOT FOUND THEN
            result := 'not_found';
            status := NULL; attempt := NULL; external_ref := NULL; updated_at := NULL;
            RETURN NEXT;
            CONTINUE;
        END IF;
        v_from := op.status;
        IF op.lease_token = it.tok AND op.status IN ('reserved', 'unknown') THEN
            IF it.o = 'unknown' THEN
                IF op.status = 'unknown' THEN
                    result := 'repeated';
                ELSE
                    UPDATE operations o
                       SET status = 'unknown', reason = it.reason, unknown_since = now(),
                           next_check_at = now(), updated_at = now()
                     WHERE o.operation_key = op.operation_key
                    RETURNING o.* INTO op;
                    PERFORM append_event(op.operation_key, 'confirmed_unknown', v_from, 'unknown', op.attempt, it.tok, p_ctx, it.i,
                                         jsonb_build_object('reason', it.reason));
                    result := 'recorded';
                END IF;
            ELSE
                late := op.status = 'unknown' OR op.lease_expires_at <= now();
                UPDATE operations o
                   SET status = it.o,
                       external_ref = CASE WHEN it.o = 'succeeded' THEN it.ref ELSE o.external_ref END,
                       response = it.resp, response_truncated = it.trunc,
                       reason = CASE WHEN it.o = 'failed' THEN it.reason END,
                       retryable = CASE WHEN it.o = 'failed' THEN it.retry END,
                       settled_at = now(), updated_at = now(), next_check_at = NULL
                 WHERE o.operation_key = op.operation_key
                RETURNING o.* INTO op;
                PERFORM append_event(op.operation_key, 'confirmed_' || it.o, v_from, it.o, op.attempt, it.tok, p_ctx, it.i,
                                     jsonb_build_object('externalRef', it.ref, 'reason', it.reason, 'retryable', it.retry,
                                                        'late', late, 'responseTruncated', it.trunc));
                result := 'recorded';
            END IF;
        ELSIF op.lease_token = it.tok AND op.status = it.o
              AND (it.o <> 'succeeded' OR op.external_ref IS NOT DISTINCT FROM it.ref) THEN
            result := 'repeated';
        ELSE
            possible_duplicate := it.o = 'succeeded'
                AND (op.status <> 'succeeded' OR op.external_ref IS DISTINCT FROM it.ref);
            PERFORM append_event(op.operation_key, 'stale_confirmation', op.status, op.status, op.attempt, it.tok, p_ctx, it.i,
                                 jsonb_build_object('reported', it.o, 'externalRef', it.ref, 'reason', it.reason,
                                                    'possibleDuplicate', possible_duplicate,
                                                    'holderToken', op.lease_token));
            result := 'stale';
        END IF;
        status := op.status;
        attempt := op.attempt;
        external_ref := op.external_ref;
        updated_at := op.updated_at;
        RETURN NEXT;
    END LOOP;
END $$;
