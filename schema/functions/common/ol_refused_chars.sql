-- The characters key-like text may not hold (operation keys, targets, queue names, priority groups,
-- dedupe keys), as a regular-expression bracket expression: control characters (Cc), white space
-- other than U+0020 (White_Space) and invisible characters (Default_Ignorable_Code_Point). The
-- same list as REFUSED_RANGES in src/keyText.ts, which says why (UTS #39, section 3.1) and which a
-- unit test checks against the Unicode properties; test/integration/security/sql-bounds.test.ts
-- checks that this pattern refuses exactly those code points. U+0000 cannot occur in text.
-- In a database whose encoding is not UTF8 only the ASCII controls are listed (the \u escapes name
-- Unicode code points, which other encodings do not number the same way).
-- A plain SQL expression without a SET clause (schema/security/function_security.sql leaves it
-- so): the planner inlines it into the calling statement. It reads no table and calls only
-- pg_catalog's current_setting, which is always found first.
CREATE OR REPLACE FUNCTION ol_refused_chars() RETURNS text
LANGUAGE sql STABLE PARALLEL SAFE
AS $$
    SELECT CASE WHEN current_setting('server_encoding') <> 'UTF8' THEN '[\u0001-\u001f\u007f]'
           ELSE '[\u0001-\u001f\u007f-\u00a0\u00ad\u034f\u061c\u115f-\u1160\u1680\u17b4-\u17b5\u180b-\u180f\u2000-\u200f'
                || '\u2028-\u202f\u205f-\u206f\u3000\u3164\ufe00-\ufe0f\ufeff\uffa0\ufff0-\ufff8\U0001bca0-\U0001bca3'
                || '\U0001d173-\U0001d17a\U000e0000-\U000e0fff]' END
$$;
