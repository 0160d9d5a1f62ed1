-- Wake-ups for ready jobs only when one is due soon, and never for webhook deliveries.
--
-- A transaction that calls NOTIFY takes a database-wide lock at commit and holds it
-- through its WAL flush (PostgreSQL serialises the notification queue that way), so
-- every notifying transaction commits one after another, whatever its tenant. Opening
-- a ticket schedules its SLA timers, so every ticket opened used to notify, and ticket
-- commands of every tenant and every API process queued on that one lock.
--
-- - A job due later than the longest scheduler poll interval (SCHEDULER_POLL_INTERVAL
--   is at most 300 s) needs no wake-up: a scheduler looks at the queue again before it
--   is due. SLA timers are hours away.
-- - Webhook deliveries are inserted by the append that creates their event (0111), and
--   schedulers also listen on helpdesk_events, which the appending process sends after
--   commit (eventstore/notifier.py): the event's notice is their wake-up.
CREATE OR REPLACE FUNCTION jobs_notify() RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, public
AS $$
DECLARE
    first_due timestamptz;
BEGIN
    SELECT min(run_at) INTO first_due
      FROM new_rows
     WHERE status = 'ready'
       AND kind <> 'webhook.deliver'
       AND run_at <= now() + interval '300 seconds';
    IF first_due IS NOT NULL THEN
        PERFORM pg_notify('helpdesk_jobs', first_due::text);
    END IF;
    RETURN NULL;
END
$$;
