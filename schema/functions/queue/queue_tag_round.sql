-- A tag rounded to a millionth of a task slot, so that virtual times that are equal in exact
-- arithmetic compare equal (0.2 * 6 and 0.2 + 2 * 0.5 are both 1.2) and ties go by task id.
-- Weights are at most 1000 in the nodes (a step of 0.001), so rounding never merges two tags of a
-- group.
CREATE OR REPLACE FUNCTION queue_tag_round(p double precision) RETURNS double precision
LANGUAGE sql IMMUTABLE
SET search_path FROM CURRENT
AS $$
    SELECT round(p * 1e6) / 1e6
$$;
