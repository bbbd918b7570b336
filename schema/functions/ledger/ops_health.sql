-- Ledger health, for a dashboard or an alert. p_days: how many days of events per day (1..366).
-- Returns {"now", "byStatus": {status: count}, "expiredLeases": count, "oldestUnknown": {"key",
-- "since", "ageSeconds"} | null, "review": {"count", "oldestSince", "oldestKey"}, "compacted":
-- count, "eventsPerDay": [{"day": "YYYY-MM-DD" (UTC), "events": n}] (oldest first),
-- "sizes": {"operationsBytes", "operationEventsBytes"} (pg_total_relation_size: heap, indexes,
-- TOAST)}. Counting by status reads the whole operations table: schedule it, do not poll it.
-- p_days outside 1 .. 366 is refused (SQLSTATE 22023), as the node refuses it.
CREATE OR REPLACE FUNCTION ops_health(p_days integer)
RETURNS jsonb
LANGUAGE plpgsql
STABLE
SET search_path FROM CURRENT
AS $$
BEGIN
    PERFORM ol_check_numbers('days of events', NULL, ARRAY[p_days::double precision], 1, 366, true);
    RETURN (SELECT jsonb_build_object(
        'now', ledger_now(),
        'byStatus', (SELECT coalesce(jsonb_object_agg(s.status, s.n), '{}'::jsonb)
                       FROM (SELECT o.status, count(*) AS n FROM operations o GROUP BY o.status) s),
        'expiredLeases', (SELECT count(*) FROM operations o WHERE o.status = 'reserved' AND o.lease_expires_at <= ledger_now()),
        'oldestUnknown', (SELECT jsonb_build_object('key', o.operation_key, 'since', o.unknown_since,
                                                    'ageSeconds', floor(extract(epoch FROM ledger_now() - o.unknown_since)))
                            FROM operations o WHERE o.status = 'unknown' ORDER BY o.unknown_since LIMIT 1),
        'review', (SELECT jsonb_build_object('count', count(*), 'oldestSince', min(o.updated_at),
                                             'oldestKey', (array_agg(o.operation_key ORDER BY o.updated_at))[1])
                     FROM operations o WHERE o.status = 'review'),
        'compacted', (SELECT count(*) FROM operations o WHERE o.compacted_attempt = o.attempt),
        'eventsPerDay', (SELECT coalesce(jsonb_agg(jsonb_build_object('day', d.day, 'events', d.n) ORDER BY d.day), '[]'::jsonb)
                           FROM (SELECT to_char(date_trunc('day', e.created_at AT TIME ZONE 'UTC'), 'YYYY-MM-DD') AS day, count(*) AS n
                                   FROM operation_events e
                                  WHERE e.created_at >= date_trunc('day', ledger_now() AT TIME ZONE 'UTC') AT TIME ZONE 'UTC'
                                                        - make_interval(days => p_days - 1)
                                  GROUP BY 1) d),
        'sizes', jsonb_build_object('operationsBytes', pg_total_relation_size('operations'::regclass),
                                    'operationEventsBytes', pg_total_relation_size('operation_events'::regclass))));
END $$;
