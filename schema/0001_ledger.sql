-- n8n-nodes-operation-ledger, migration 0001: the operation ledger.
--
-- Apply by hand (one transaction; the only variable is the schema name):
--   psql -1 -v ON_ERROR_STOP=1 -v schema=operation_ledger -f schema/0001_ledger.sql
-- The nodes apply the same file on first use when the credential allows it.
--
-- One row per operation key (the business intent), and an append-only event log.
--
-- State machine. Each arrow is one guarded change inside the functions below; every arrow appends
-- an event. Time always comes from the database clock (now()).
--
--   (no row) --reserve--------------------------------> reserved  (attempt 1, lease, lease token)
--   reserved --confirm succeeded (lease token)---------> succeeded (external reference, response)
--   reserved --confirm failed (lease token)------------> failed    (reason, retryable or not)
--   reserved --confirm unknown (lease token)-----------> unknown
--   reserved --lease expired, seen by reserve/reconcile> unknown   (never re-reserved silently)
--   failed(retryable) --reserve------------------------> reserved  (attempt + 1, new downstream key)
--   unknown --late confirm from the same lease token---> succeeded | failed (evidence, flagged late)
--   unknown --reconcile: happened----------------------> succeeded (migration 0003)
--   unknown --reconcile: did not happen----------------> failed, retryable (migration 0003)
--   unknown --reconcile: still unknown x N-------------> review    (migration 0003; for a human)
--
-- Rows are never deleted by this package.

CREATE SCHEMA IF NOT EXISTS :"schema";
SET search_path TO :"schema";

CREATE TABLE IF NOT EXISTS schema_migrations (
    version     integer PRIMARY KEY,
    name        text NOT NULL,
    applied_at  timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE operations (
    operation_key       text PRIMARY KEY CHECK (octet_length(operation_key) BETWEEN 1 AND 512),
    status              text NOT NULL CHECK (status IN ('reserved', 'succeeded', 'failed', 'unknown', 'review')),
    -- SHA-256 over the RFC 8785 canonical JSON of the request, computed by the node (hex).
    fingerprint         text NOT NULL,
    fingerprint_alg     text NOT NULL,
    target              text,
    request             jsonb,
    attempt             integer NOT NULL DEFAULT 1 CHECK (attempt >= 1),
    -- Sent to the outside system as Idempotency-Key; new for each attempt.
    idempotency_key     text NOT NULL,
    lease_token         uuid,
    lease_expires_at    timestamptz,
    external_ref        text,
    response            jsonb,
    response_truncated  boolean NOT NULL DEFAULT false,
    reason              text,
    retryable           boolean,
    unknown_since       timestamptz,
    reconcile_checks    integer NOT NULL DEFAULT 0,
    next_check_at       timestamptz,
    claim_token         uuid,
    claim_expires_at    timestamptz,
    created_at          timestamptz NOT NULL DEFAULT now(),
    updated_at          timestamptz NOT NULL DEFAULT now(),
    settled_at          timestamptz
);

-- What the reconciler scans: unknown rows by when they are next due, expired leases by expiry.
CREATE INDEX operations_unknown_due_idx ON operations (next_check_at) WHERE status = 'unknown';
CREATE INDEX operations_reserved_lease_idx ON operations (lease_expires_at) WHERE status = 'reserved';
CREATE INDEX operations_review_idx ON operations (updated_at) WHERE status = 'review';

CREATE TABLE operation_events (
    event_id        bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    operation_key   text NOT NULL,
    event           text NOT NULL,
    from_status     text,
    to_status       text,
    attempt         integer,
    lease_token     uuid,
    execution_id    text,
    workflow_id     text,
    node_name       text,
    item_index      integer,
    detail          jsonb,
    created_at      timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX operation_events_key_idx ON operation_events (operation_key, event_id);

-- The event log is append-only.
CREATE FUNCTION operation_events_append_only() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'operation_events is append-only (% refused)', TG_OP;
END $$;
CREATE TRIGGER operation_events_no_update_delete
    BEFORE UPDATE OR DELETE ON operation_events
    FOR EACH ROW EXECUTE FUNCTION operation_events_append_only();

-- The downstream idempotency key: an RFC 9562 version 8 UUID whose 122 free bits come from
-- SHA-256(operation_key || '#' || attempt). Deterministic, so an operator can recompute it.
CREATE FUNCTION downstream_idempotency_key(p_key text, p_attempt integer) RETURNS text
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
    SELECT (substr(h, 1, 12) || '8' || substr(h, 14, 3) || '8' || substr(h, 18, 15))::uuid::text
    FROM (SELECT encode(sha256(convert_to(p_key || '#' || p_attempt::text, 'UTF8')), 'hex') AS h) s
$$;

-- Called only from the functions below, which pin search_path; a SET clause here would cost a
-- configuration change on every event.
CREATE FUNCTION append_event(
    p_key text, p_event text, p_from text, p_to text, p_attempt integer, p_token uuid,
    p_ctx jsonb, p_item integer, p_detail jsonb
) RETURNS void
LANGUAGE sql
AS $$
    INSERT INTO operation_events (operation_key, event, from_status, to_status, attempt, lease_token,
                                  execution_id, workflow_id, node_name, item_index, detail)
    VALUES (p_key, p_event, p_from, p_to, p_attempt, p_token,
            p_ctx->>'executionId', p_ctx->>'workflowId', p_ctx->>'nodeName', p_item, p_detail)
$$;

-- Reserve a batch. p_items: [{"i": item index, "k": operation key, "f": fingerprint,
-- "a": fingerprint algorithm, "t": target or null, "r": request (json), "l": lease seconds}].
-- p_ctx: {"executionId", "workflowId", "nodeName"}. Items are handled in key order (so concurrent
-- batches lock rows in one order and cannot deadlock); one row is returned per item.
-- Outcomes: proceed | already_succeeded | in_progress | needs_reconcile | conflict | failed_permanently.
CREATE FUNCTION reserve_operations(p_items jsonb, p_ctx jsonb)
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

-- Confirm a batch. p_items: [{"i": item index, "k": operation key, "tok": lease token,
-- "o": "succeeded" | "failed" | "unknown", "ref": external reference, "resp": response (json),
-- "trunc": response truncated?, "reason": text, "retry": retryable? (failed only)}].
-- Results: recorded | repeated (same confirmation again, harmless) | stale (lease token is not the
-- holder's, or the row is already settled differently: recorded as an event, row untouched) |
-- not_found. possible_duplicate is set when a stale report says the write succeeded but the row
-- does not hold that success.
CREATE FUNCTION confirm_operations(p_items jsonb, p_ctx jsonb)
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

INSERT INTO schema_migrations (version, name) VALUES (1, 'ledger') ON CONFLICT (version) DO NOTHING;
