-- EXPERIMENT, not a migration: what BENCHMARKS.md measured for the proposed ledger fixes (L1, L2).
-- Applied by hand to a throw-away schema created by the migrations (psql -v schema=...).
-- reserve_operations_v3 elides the rare branches (lease expired, retryable failure) into
-- 'needs_reconcile' for the measurement; a real change keeps them from reserve_operations.
SET search_path TO :"schema";
CREATE OR REPLACE FUNCTION append_event(
    p_key text, p_event text, p_from text, p_to text, p_attempt integer, p_token uuid,
    p_ctx jsonb, p_item integer, p_detail jsonb
) RETURNS void
LANGUAGE plpgsql
AS $$ BEGIN
    INSERT INTO operation_events (operation_key, event, from_status, to_status, attempt, lease_token,
                                  execution_id, workflow_id, node_name, item_index, detail)
    VALUES (p_key, p_event, p_from, p_to, p_attempt, p_token,
            p_ctx->>'executionId', p_ctx->>'workflowId', p_ctx->>'nodeName', p_item, p_detail);
END $$;

CREATE FUNCTION reserve_operations_v3(p_items jsonb, p_ctx jsonb)
RETURNS TABLE (
    idx integer, outcome text, status text, attempt integer, lease_token uuid,
    lease_expires_at timestamptz, idempotency_key text, external_ref text, response jsonb,
    response_truncated boolean, reason text, retryable boolean, created_at timestamptz,
    updated_at timestamptz
)
LANGUAGE plpgsql
SET search_path FROM CURRENT
AS $$
#variable_conflict use_column
DECLARE
    it record;
    op operations%ROWTYPE;
    v_i integer[];
    v_rows operations[];
BEGIN
    -- 1. Every key's first item tries the insert, in key order (one statement); the winners' events too.
    WITH items AS (
        SELECT DISTINCT ON (e->>'k') (e->>'i')::integer AS i, e->>'k' AS k, e->>'f' AS f, e->>'a' AS a, e->>'t' AS t,
               e->'r' AS r, (e->>'l')::integer AS l
        FROM jsonb_array_elements(p_items) AS e
        ORDER BY e->>'k', (e->>'i')::integer
    ), ins AS (
        INSERT INTO operations AS o (operation_key, status, fingerprint, fingerprint_alg, target, request,
                                     attempt, idempotency_key, lease_token, lease_expires_at)
        SELECT x.k, 'reserved', x.f, x.a, x.t, x.r, 1, downstream_idempotency_key(x.k, 1),
               gen_random_uuid(), now() + make_interval(secs => x.l)
          FROM items x ORDER BY x.k
        ON CONFLICT (operation_key) DO NOTHING
        RETURNING o.*
    ), won AS (
        SELECT items.i, ins AS row FROM ins JOIN items ON items.k = ins.operation_key
    ), ev AS (
        INSERT INTO operation_events (operation_key, event, from_status, to_status, attempt, lease_token,
                                      execution_id, workflow_id, node_name, item_index, detail)
        SELECT (w.row).operation_key, 'reserved', NULL, 'reserved', (w.row).attempt, (w.row).lease_token,
               p_ctx->>'executionId', p_ctx->>'workflowId', p_ctx->>'nodeName', w.i, NULL
          FROM won w
    )
    SELECT coalesce(array_agg(w.i), '{}'), coalesce(array_agg(w.row), '{}') INTO v_i, v_rows FROM won w;

    RETURN QUERY
    SELECT x.i, 'proceed'::text, r.status, r.attempt, r.lease_token, r.lease_expires_at, r.idempotency_key,
           r.external_ref, NULL::jsonb, r.response_truncated, r.reason, r.retryable, r.created_at, r.updated_at
      FROM unnest(v_rows) WITH ORDINALITY AS r
      JOIN unnest(v_i) WITH ORDINALITY AS x(i, n) ON x.n = r.ordinality;

    -- 2. The rest (keys that existed, repeats within the batch): decided one by one, in key order.
    FOR it IN
        SELECT (e->>'i')::integer AS i, e->>'k' AS k, e->>'f' AS f, e->>'a' AS a, e->>'t' AS t,
               e->'r' AS r, (e->>'l')::integer AS l
        FROM jsonb_array_elements(p_items) AS e
        WHERE NOT ((e->>'i')::integer = ANY (v_i))
        ORDER BY e->>'k', (e->>'i')::integer
    LOOP
        idx := it.i;
        SELECT * INTO op FROM operations o WHERE o.operation_key = it.k FOR UPDATE;
        IF op.fingerprint <> it.f THEN
            outcome := 'conflict';
            PERFORM append_event(op.operation_key, 'conflict_rejected', op.status, op.status, op.attempt, NULL, p_ctx, it.i,
                                 jsonb_build_object('fingerprint', it.f));
        ELSIF op.status = 'succeeded' THEN
            outcome := 'already_succeeded';
        ELSIF op.status = 'reserved' AND op.lease_expires_at > now() THEN
            outcome := 'in_progress';
        ELSE
            outcome := 'needs_reconcile'; -- (the other branches as in reserve_operations; elided for the measurement)
        END IF;
        status := op.status; attempt := op.attempt;
        lease_token := CASE WHEN outcome = 'proceed' THEN op.lease_token END;
        lease_expires_at := op.lease_expires_at; idempotency_key := op.idempotency_key;
        external_ref := CASE WHEN outcome = 'conflict' THEN NULL ELSE op.external_ref END;
        response := CASE WHEN outcome = 'already_succeeded' THEN op.response END;
        response_truncated := op.response_truncated;
        reason := CASE WHEN outcome = 'conflict' THEN NULL ELSE op.reason END;
        retryable := op.retryable; created_at := op.created_at; updated_at := op.updated_at;
        RETURN NEXT;
    END LOOP;
END $$;

-- Confirm fast path: items whose key is unique in the batch and whose row is 'reserved' under a
-- live lease with the item's token, reporting succeeded or failed: locked in key order, updated and
-- logged by one statement each. The rest take the existing per-item function.
CREATE FUNCTION confirm_operations_v3(p_items jsonb, p_ctx jsonb)
RETURNS TABLE (
    idx integer, result text, status text, attempt integer, external_ref text, late boolean,
    possible_duplicate boolean, updated_at timestamptz
)
LANGUAGE plpgsql
SET search_path FROM CURRENT
AS $$
#variable_conflict use_column
DECLARE
    v_i integer[];
    v_rest jsonb;
BEGIN
    CREATE TEMP TABLE IF NOT EXISTS ol_confirm_fast (i integer, k text PRIMARY KEY, tok uuid, o text, ref text, resp jsonb,
                                                     trunc boolean, reason text, retry boolean) ON COMMIT DROP;
    TRUNCATE ol_confirm_fast;
    INSERT INTO ol_confirm_fast
    SELECT x.i, x.k, x.tok, x.o, x.ref, x.resp, x.trunc, x.reason, x.retry
      FROM (SELECT (e->>'i')::integer AS i, e->>'k' AS k, (e->>'tok')::uuid AS tok, e->>'o' AS o,
                   e->>'ref' AS ref, e->'resp' AS resp, coalesce((e->>'trunc')::boolean, false) AS trunc,
                   e->>'reason' AS reason, coalesce((e->>'retry')::boolean, false) AS retry,
                   count(*) OVER (PARTITION BY e->>'k') AS dup
              FROM jsonb_array_elements(p_items) AS e) x
     WHERE x.dup = 1 AND x.o IN ('succeeded', 'failed');
    -- lock in key order
    PERFORM 1 FROM operations o JOIN ol_confirm_fast f ON f.k = o.operation_key
      WHERE o.lease_token = f.tok AND o.status = 'reserved' AND o.lease_expires_at > now()
      ORDER BY o.operation_key FOR UPDATE OF o;
    WITH upd AS (
        UPDATE operations o
           SET status = f.o,
               external_ref = CASE WHEN f.o = 'succeeded' THEN f.ref ELSE o.external_ref END,
               response = f.resp, response_truncated = f.trunc,
               reason = CASE WHEN f.o = 'failed' THEN f.reason END,
               retryable = CASE WHEN f.o = 'failed' THEN f.retry END,
               settled_at = now(), updated_at = now(), next_check_at = NULL
          FROM ol_confirm_fast f
         WHERE o.operation_key = f.k AND o.lease_token = f.tok AND o.status = 'reserved' AND o.lease_expires_at > now()
        RETURNING f.i, f.tok, f.ref, f.reason, f.retry, f.trunc, f.o, o.operation_key, o.status, o.attempt, o.external_ref, o.updated_at
    ), ev AS (
        INSERT INTO operation_events (operation_key, event, from_status, to_status, attempt, lease_token,
                                      execution_id, workflow_id, node_name, item_index, detail)
        SELECT u.operation_key, 'confirmed_' || u.o, 'reserved', u.o, u.attempt, u.tok,
               p_ctx->>'executionId', p_ctx->>'workflowId', p_ctx->>'nodeName', u.i,
               jsonb_build_object('externalRef', u.ref, 'reason', u.reason, 'retryable', u.retry,
                                  'late', false, 'responseTruncated', u.trunc)
          FROM upd u
    ), out AS (
        SELECT u.i, u.status, u.attempt, u.external_ref, u.updated_at FROM upd u
    )
    SELECT coalesce(array_agg(out.i), '{}') INTO v_i FROM out;
    -- (fast-path rows are re-read for the result; the rest go through the per-item function)
    RETURN QUERY
    SELECT f.i, 'recorded'::text, o.status, o.attempt, o.external_ref, false, false, o.updated_at
      FROM ol_confirm_fast f JOIN operations o ON o.operation_key = f.k
     WHERE f.i = ANY (v_i);
    SELECT jsonb_agg(e) INTO v_rest FROM jsonb_array_elements(p_items) e WHERE NOT ((e->>'i')::integer = ANY (v_i));
    IF v_rest IS NOT NULL THEN
        RETURN QUERY SELECT * FROM confirm_operations(v_rest, p_ctx);
    END IF;
END $$;
RESET search_path;
