-- No wake-up NOTIFY for mailed replies (`mail.send`) and Slack posts (`slack.post`)
-- either, as 0112 did for webhook deliveries. Both are inserted only by the appending
-- statement of the event they deliver (0580 and 0696, 0760) and are due at once, so
-- every public reply on a mail ticket (or a Slack-linked one) notified inside its own
-- transaction: its commit took the database-wide notification lock and held it through
-- the WAL flush, queueing the commits of every such reply, of every tenant and API
-- process, one behind another. The schedulers listen on helpdesk_events too, which the
-- appending process sends after commit (eventstore/notifier.py): the event's notice is
-- their wake-up, as it is a webhook delivery's.
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
       AND kind NOT IN ('webhook.deliver', 'mail.send', 'slack.post')
       AND run_at <= now() + interval '300 seconds';
    IF first_due IS NOT NULL THEN
        PERFORM pg_notify('helpdesk_jobs', first_due::text);
    END IF;
    RETURN NULL;
END
$$;
