-- The weight enqueue tags a group's tasks with (1 to 1000): the weight the queue's Dequeue last
-- claimed with (queue_group_weights, written by queue_claim), else the default of the node's
-- default groups (high 5, normal 2, low 1), else 1. Reads one row; no lock.
-- plpgsql, not sql: a SQL-language function with a SET clause (every function gets search_path, see
-- schema/security/function_security.sql) is never inlined, and the statement that calls it plans
-- its body again on every execution (0.05 ms for this body, measured with pgbench: BENCHMARKS.md,
-- "planned SQL functions"); plpgsql keeps the plan for the connection.
CREATE OR REPLACE FUNCTION queue_group_weight(p_queue text, p_group text) RETURNS integer
LANGUAGE plpgsql STABLE
SET search_path FROM CURRENT
AS $$
BEGIN
    RETURN coalesce(
        (SELECT w.weight FROM queue_group_weights w WHERE w.queue = p_queue AND w.priority_group = p_group),
        CASE p_group WHEN 'high' THEN 5 WHEN 'normal' THEN 2 ELSE 1 END);
END $$;
