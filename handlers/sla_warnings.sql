-- Statements of the SLA warning pass (handlers/sla_warnings.py).

-- name: warn_candidates --
-- $1 tenant_id, $2 now, $3 the budget left (ms) below which a clock is warned on a
-- calendar of every hour (NULL: business hours, where calendar time left says nothing)
-- The tickets with a running clock not yet warned or breached.
SELECT t.id
  FROM tickets t
 WHERE t.tenant_id = $1 AND t.state <> 'closed'
   AND EXISTS (SELECT 1 FROM jsonb_each(t.clocks) c(metric, clock)
                WHERE clock ->> 'due_at' IS NOT NULL
                  AND clock ->> 'breached_at' IS NULL
                  AND clock ->> 'warned_at' IS NULL
                  AND clock ->> 'fulfilled_at' IS NULL
                  AND NOT coalesce((clock ->> 'paused')::boolean, false)
                  AND ($3::bigint IS NULL
                       OR (clock ->> 'due_at')::timestamptz - $2::timestamptz
                          <= make_interval(secs => ((clock ->> 'target_ms')::bigint
                                                    * $3::bigint / 100) / 1000.0)))
