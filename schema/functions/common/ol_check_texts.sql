-- Refuses key-like text the nodes refuse (src/keyText.ts, src/ledger/validate.ts,
-- src/queue/types.ts, src/queue/enqueue.ts), so that a direct SQL call cannot store what no node
-- would: RAISE 22023 (invalid_parameter_value) naming the first bad value, nothing changed.
--   p_what    what the values are, for the message ("the operation key", "queue name", ...)
--   p_items   the item index of each value (null: a single argument, no item in the message)
--   p_values  the values; p_rule says which rule applies:
--     'operation_key'  required; no refused character (ol_refused_chars()); no space at the start or
--                      end, nor next to a ':' separator; Normalization Form C (UAX #15; the nodes
--                      normalise, so a non-NFC key can only come from a direct call; checked in UTF8
--                      databases); at most p_max bytes of UTF-8
--     'dedupe_key'     null or empty = none; else no refused character, NFC, at most p_max bytes
--     'name'           a queue or group name: required, not only spaces, no refused character,
--                      at most p_max bytes
--     'target'         null or empty = none; else no refused character, at most p_max UTF-16 code
--                      units (what JavaScript's length counts)
--     'text'           free text (a reason, a reference): null or empty = none; else at most p_max
--                      UTF-16 code units (line breaks and tabs are allowed)
--     'required_text'  as 'text', but required: not empty and not only white space (the characters
--                      JavaScript's String.prototype.trim removes)
-- A plain loop of simple expressions (no query): about 5 microseconds for one value, 1 to 2 per
-- further one; ASCII text skips the costlier tests (it has no refused character but the controls,
-- and is always NFC).
CREATE OR REPLACE FUNCTION ol_check_texts(p_what text, p_items integer[], p_values text[], p_rule text, p_max integer)
RETURNS void
LANGUAGE plpgsql STABLE
AS $$
DECLARE
    v_pat text := ol_refused_chars();
    v_utf8 boolean := current_setting('server_encoding') = 'UTF8';
    v_free boolean := p_rule IN ('text', 'required_text');
    -- Not only JavaScript trim()'s white space (WhiteSpace and LineTerminator of ECMA-262).
    v_notblank text := '[^\u0009-\u000d\u0020\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff]';
    -- What plain ASCII text of this rule must not match (then only its length is left to check).
    v_ascii_bad text := CASE p_rule WHEN 'operation_key' THEN '[\u0001-\u001f\u007f]|^ | $| :|: '
                                    WHEN 'name' THEN '[\u0001-\u001f\u007f]|^ *$'
                                    ELSE '[\u0001-\u001f\u007f]' END;
    v text;
    v_ascii boolean;
    v_ch text;
    v_problem text;
    n integer := 0;
BEGIN
    -- No values (an empty batch: array_agg over no rows is null): nothing to refuse.
    IF p_values IS NULL THEN
        RETURN;
    END IF;
    FOREACH v IN ARRAY p_values LOOP
        n := n + 1;
        -- The common case in one test: key-like ASCII text that breaks no rule, or free text that
        -- is short enough whatever its code points (at most 2 UTF-16 units each).
        CONTINUE WHEN CASE WHEN v_free THEN char_length(v) * 2 <= p_max AND (p_rule = 'text' OR v ~ v_notblank)
                           ELSE octet_length(v) = char_length(v) AND octet_length(v) <= p_max AND v !~ v_ascii_bad END;
        v_problem := NULL;
        IF v IS NULL OR v = '' THEN
            IF p_rule IN ('operation_key', 'name', 'required_text') THEN
                v_problem := 'is empty';
            END IF;
            CONTINUE WHEN v_problem IS NULL;
        ELSE
            v_ascii := octet_length(v) = char_length(v);
            IF v_free THEN
                IF p_rule = 'required_text' AND v !~ v_notblank THEN
                    v_problem := 'is empty';
                END IF;
            ELSE
                v_ch := CASE WHEN v_ascii THEN substring(v FROM '[\u0001-\u001f\u007f]') ELSE substring(v FROM v_pat) END;
                IF v_ch IS NOT NULL THEN
                    v_problem := 'contains '
                        || CASE WHEN ascii(v_ch) < 32 OR ascii(v_ch) BETWEEN 127 AND 159 THEN 'a control character'
                                WHEN v_ch ~ '[\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]' THEN 'white space other than the plain space'
                                ELSE 'an invisible character' END
                        || ' (U+' || upper(lpad(to_hex(ascii(v_ch)), 4, '0')) || ') at character ' || strpos(v, v_ch)
                        || '; it would look like another key or break it';
                ELSIF p_rule = 'name' AND btrim(v, ' ') = '' THEN
                    v_problem := 'is only spaces';
                ELSIF p_rule = 'operation_key' AND v ~ '^ | $| :|: ' THEN
                    v_problem := 'has a space at its start or end, or next to a ":" separator';
                END IF;
            END IF;
            IF v_problem IS NULL THEN
                IF v_free OR p_rule = 'target' THEN
                    -- UTF-16 code units: one per code point, two for those above U+FFFF.
                    IF char_length(v) > p_max OR (NOT v_ascii AND char_length(v) * 2 > p_max
                                                  AND char_length(v) + char_length(regexp_replace(v, '[^\U00010000-\U0010ffff]', '', 'g')) > p_max) THEN
                        v_problem := 'is longer than ' || p_max || ' characters (UTF-16 code units)';
                    END IF;
                ELSIF octet_length(v) > p_max THEN
                    v_problem := 'is ' || octet_length(v) || ' bytes long; at most ' || p_max || ' are allowed';
                ELSIF p_rule IN ('operation_key', 'dedupe_key') AND v_utf8 AND NOT v_ascii AND NOT (v IS NFC NORMALIZED) THEN
                    v_problem := 'is not in Unicode Normalization Form C (normalise it first; the nodes do)';
                END IF;
            END IF;
        END IF;
        IF v_problem IS NOT NULL THEN
            RAISE EXCEPTION '%', CASE WHEN p_items IS NOT NULL THEN 'item ' || coalesce(p_items[n]::text, '?') || ': ' ELSE '' END
                                 || p_what || ' ' || v_problem
                USING ERRCODE = '22023';
        END IF;
    END LOOP;
END $$;
