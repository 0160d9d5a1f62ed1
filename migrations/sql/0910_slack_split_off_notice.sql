-- A ticket split off a Slack ticket is a new ticket to the notices: with the connection's
-- `ticket_opened` notice chosen, its opening (`TicketSplitFrom`) posts a notice too. The
-- split-off ticket has no thread of its own (a thread is one ticket's), so the notice
-- goes to the thread of the ticket it was split off, where its requester wrote
-- (handlers/slack_out.py says it there). Everything else is as in 0760.
CREATE OR REPLACE FUNCTION events_schedule_slack() RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, public
AS $$
DECLARE
    tenant uuid := nullif(current_setting('app.tenant_id', true), '')::uuid;
    notices jsonb;
BEGIN
    SELECT s.notices INTO notices FROM slack_integrations s WHERE s.tenant_id = tenant;
    IF NOT FOUND THEN
        RETURN NULL;
    END IF;
    INSERT INTO jobs (tenant_id, kind, dedupe_key, payload, run_at, max_attempts)
    SELECT n.tenant_id, 'slack.post',
           CASE WHEN n.type = 'MessageAdded' THEN 'slack:' || (n.data ->> 'message_id')
                ELSE 'slack:notice:' || n.seq END,
           jsonb_build_object('seq', n.seq, 'ticket_id', n.stream_id), now(), 8
      FROM new_events n
      JOIN slack_threads t
        ON t.tenant_id = n.tenant_id
       AND t.ticket_id = CASE WHEN n.type = 'TicketSplitFrom'
                              THEN (n.data ->> 'source_id')::uuid ELSE n.stream_id END
     WHERE n.actor_kind <> 'import'
       AND ((n.type = 'MessageAdded' AND n.data ->> 'visibility' = 'public'
             AND n.data -> 'author' ->> 'kind' = 'agent')
            OR (n.type IN ('TicketOpened', 'TicketSplitFrom')
                AND notices ->> 'ticket_opened' = 'true')
            OR (n.type = 'SlaBreached' AND notices ->> 'sla_breached' = 'true'))
     ORDER BY n.seq;
    RETURN NULL;
END
$$;
REVOKE ALL ON FUNCTION events_schedule_slack() FROM PUBLIC;
