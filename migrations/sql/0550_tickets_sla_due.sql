-- The ticket list sorts by what is due: `sort=sla_due` orders tickets by the next
-- deadline among their running SLA clocks, soonest first, and tickets with no running
-- clock last. The deadline is kept in its own column, written by the inline projection
-- with the rest of the row (projections/inline.py), so the order is an index walk
-- and not a scan over every ticket's clocks.
--
-- 'infinity' rather than NULL for "no running clock": the keyset (sla_due, id) then
-- needs no special case for the tickets at the end, and a row comparison on the index
-- columns is all a page takes.

ALTER TABLE tickets ADD COLUMN sla_due timestamptz NOT NULL DEFAULT 'infinity';

-- A clock runs while it has started, is not paused, is not fulfilled and has a due
-- time (domain.sla.SlaClock.running).
UPDATE tickets t
   SET sla_due = coalesce((
       SELECT min((c.value ->> 'due_at')::timestamptz)
         FROM jsonb_each(t.clocks) AS c
        WHERE c.value ->> 'started_at' IS NOT NULL
          AND c.value ->> 'due_at' IS NOT NULL
          AND c.value ->> 'fulfilled_at' IS NULL
          AND NOT coalesce((c.value ->> 'paused')::boolean, false)), 'infinity');

CREATE INDEX tickets_sla_due ON tickets (tenant_id, sla_due, id);
CREATE INDEX tickets_assignee_sla_due ON tickets (tenant_id, assignee, sla_due, id);
