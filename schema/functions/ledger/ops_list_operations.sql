-- Operator list: operations that need a person, oldest first, paged by keyset.
-- p_kind: 'unknown' (age from unknown_since), 'review' (age from updated_at, when it entered
-- review), 'expired_lease' (reserved, lease ended; age from lease_expires_at), 'failed' (age from
-- settled_at), 'possible_duplicate' (marked as possibly written more than once, any status; age
-- from possible_duplicate_at, migration 0011). p_min_age_seconds: only operations at least this old (0: all). p_target: only this
-- target (NULL: all). p_limit: page size. p_after_at / p_after_key: the "next" cursor of the
-- previous page (NULL for the first page); the page holds rows strictly after it in
-- (age, operation_key) order, so rows added meanwhile never shift or repeat a page.
-- Returns {"total": rows matching kind, age and target (all pages), "items": [...rows without
-- tokens and bodies, plus "ageSince"], "next": {"at", "key"} or null on the last page}.
-- p_min_age_seconds 0 .. 316224000 (10 years of 366 days), p_limit 1 .. 1000, as the node.
CREATE OR REPLACE FUNCTION ops_list_operations(
    p_kind text, p_min_age_seconds integer, p_target text, p_limit integer,
    p_after_at timestamptz, p_after_key text
)
RETURNS jsonb
LANGUAGE plpgsql
STABLE
SET search_path FROM CURRENT
-- A plan is kept per connection, and one made while the tables were small (or analysed small)
-- reads them sequentially for as long as the connection lives, even for a primary-key lookup:
-- sequential scans are priced out (docs/schema.md, "Plans kept from a small table"). JIT is off: a statement whose
-- only path is a scan would carry the priced-out cost and be compiled on every call.
SET enable_seqscan = off
SET jit = off
AS $$
DECLARE
    v_col text;
    v_where text;
    v_total bigint;
    v_items jsonb;
    v_rows integer;
    v_last_at text;
    v_last_key text;
BEGIN
    -- The node's bounds (src/ledger/admin/list.ts, checkListOptions); SQLSTATE 22023 otherwise.
    PERFORM ol_check_numbers('the minimum age (seconds)', NULL, ARRAY[p_min_age_seconds::double precision], 0, 316224000, true),
            ol_check_numbers('the page size', NULL, ARRAY[p_limit::double precision], 1, 1000, true),
            ol_check_texts('the target', NULL, ARRAY[p_target], 'target', 200);
    IF p_after_key IS NOT NULL THEN
        PERFORM ol_check_texts('the cursor''s operation key', NULL, ARRAY[p_after_key], 'operation_key', 512);
    END IF;
    -- Column and predicate come from this fixed list, never from the caller's text.
    CASE p_kind
        WHEN 'unknown' THEN v_col := 'unknown_since'; v_where := $w$o.status = 'unknown'$w$;
        WHEN 'review' THEN v_col := 'updated_at'; v_where := $w$o.status = 'review'$w$;
        WHEN 'expired_lease' THEN v_col := 'lease_expires_at'; v_where := $w$o.status = 'reserved' AND o.lease_expires_at <= ledger_now()$w$;
        WHEN 'failed' THEN v_col := 'settled_at'; v_where := $w$o.status = 'failed'$w$;
        WHEN 'possible_duplicate' THEN v_col := 'possible_duplicate_at'; v_where := $w$o.possible_duplicate_at IS NOT NULL$w$;
        ELSE RAISE EXCEPTION 'unknown list kind %', p_kind USING ERRCODE = '22023';
    END CASE;
    v_where := v_where || format(' AND o.%I <= ledger_now() - make_interval(secs => $1) AND ($2::text IS NULL OR o.target = $2)', v_col);
    EXECUTE format('SELECT count(*) FROM operations o WHERE %s', v_where) INTO v_total USING p_min_age_seconds, p_target;
    EXECUTE format(
        $q$WITH page AS (
               SELECT o.%1$I AS age_at, o.operation_key, to_jsonb(o) AS j FROM operations o
                WHERE %2$s AND ($3::timestamptz IS NULL OR (o.%1$I, o.operation_key) > ($3, $4::text))
                ORDER BY o.%1$I, o.operation_key LIMIT $5)
           SELECT coalesce(jsonb_agg((j - 'lease_token_hash' - 'claim_token_hash' - 'request' - 'response')
                                     || jsonb_build_object('ageSince', age_at) ORDER BY age_at, operation_key), '[]'::jsonb),
                  count(*)::integer,
                  (array_agg(to_jsonb(age_at) #>> '{}' ORDER BY age_at DESC, operation_key DESC))[1],
                  (array_agg(operation_key ORDER BY age_at DESC, operation_key DESC))[1]
             FROM page$q$, v_col, v_where)
        INTO v_items, v_rows, v_last_at, v_last_key
        USING p_min_age_seconds, p_target, p_after_at, p_after_key, p_limit;
    RETURN jsonb_build_object(
        'total', v_total,
        'items', v_items,
        'next', CASE WHEN v_rows = p_limit THEN jsonb_build_object('at', v_last_at, 'key', v_last_key) END);
END $$;
