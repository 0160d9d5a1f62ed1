-- The appending statement's mail jobs, both kinds: 0670 added `mail.notify` beside
-- `mail.send`, and 0695 made `mail.send` skip imported events (actor kind `import`)
-- from 0670's forerunner, so it dropped `mail.notify` again. This is both: the two
-- jobs, neither for an imported event (an import mails nobody, docs/import.md).
CREATE OR REPLACE FUNCTION events_schedule_mail() RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, public
AS $$
DECLARE
    tenant uuid := nullif(current_setting('app.tenant_id', true), '')::uuid;
    notices jsonb;
BEGIN
    IF NOT EXISTS (SELECT 1 FROM mailboxes m WHERE m.tenant_id = tenant) THEN
        RETURN NULL;
    END IF;
    INSERT INTO jobs (tenant_id, kind, dedupe_key, payload, run_at, max_attempts)
    SELECT n.tenant_id, 'mail.send', 'mail:' || (n.data ->> 'message_id'),
           jsonb_build_object('seq', n.seq, 'ticket_id', n.stream_id), now(), 8
      FROM new_events n
      JOIN mail_threads t ON t.tenant_id = n.tenant_id AND t.ticket_id = n.stream_id
     WHERE n.type = 'MessageAdded'
       AND n.data ->> 'visibility' = 'public'
       AND n.data -> 'author' ->> 'kind' = 'agent'
       AND n.actor_kind <> 'import'
     ORDER BY n.seq;
    SELECT s.settings -> 'mail_notifications' INTO notices
      FROM tenant_settings s WHERE s.tenant_id = tenant;
    IF notices IS NULL THEN
        RETURN NULL;  -- the defaults: no acknowledgement, assignment or breach mail
    END IF;
    INSERT INTO jobs (tenant_id, kind, dedupe_key, payload, run_at, max_attempts)
    SELECT n.tenant_id, 'mail.notify', 'notice:' || n.seq,
           jsonb_build_object('seq', n.seq, 'stream_id', n.stream_id), now(), 8
      FROM new_events n
     WHERE n.actor_kind <> 'import'
       AND ((n.type = 'TicketOpened' AND notices ->> 'acknowledgement' = 'true')
            OR (n.type = 'TicketAssigned' AND notices ->> 'assignment' = 'true'
                AND n.data ->> 'assignee' IS NOT NULL)
            OR (n.type = 'SlaBreached' AND notices ->> 'breach' = 'true'))
     ORDER BY n.seq;
    RETURN NULL;
END
$$;
REVOKE ALL ON FUNCTION events_schedule_mail() FROM PUBLIC;
