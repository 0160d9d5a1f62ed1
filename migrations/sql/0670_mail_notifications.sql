-- Notification mail (docs/email.md): invitations, portal password links, a new ticket's
-- acknowledgement to its requester, and assignment and breach notices to agents, each
-- sent by a `mail.notify` job after the commit that called for it.

-- One row per notification mail: made once (its dedupe key names what it tells of and
-- to whom), with its Message-ID, before any attempt, so a retry sends the same mail and
-- a row `sent` is never sent again. `data` holds the template's values, sealed by the
-- key-encryption key (bound to the tenant and the row), because an invitation's or a
-- portal link's token is in it and is stored nowhere else; it is blanked once the row
-- is sent or dead.
CREATE TABLE mail_notifications (
    tenant_id       uuid NOT NULL REFERENCES tenants (id),
    id              uuid NOT NULL,
    kind            text NOT NULL CHECK (kind IN ('invitation', 'portal_link', 'acknowledgement',
                                                  'assignment', 'breach')),
    dedupe_key      text NOT NULL,
    mailbox_id      uuid NOT NULL,
    to_address      text NOT NULL,
    ticket_id       uuid,
    rfc_message_id  text NOT NULL,
    data            bytea,
    kek             text,
    status          text NOT NULL CHECK (status IN ('queued', 'sent', 'dead')),
    reason          text,
    attempts        integer NOT NULL DEFAULT 0,
    created_at      timestamptz NOT NULL,
    sent_at         timestamptz,
    PRIMARY KEY (tenant_id, id),
    FOREIGN KEY (tenant_id, mailbox_id) REFERENCES mailboxes (tenant_id, id)
);
CREATE UNIQUE INDEX mail_notifications_dedupe ON mail_notifications (tenant_id, dedupe_key);
-- An erasure blanks the contact's address on its notifications.
CREATE INDEX mail_notifications_to ON mail_notifications (tenant_id, lower(to_address));

ALTER TABLE mail_notifications ENABLE ROW LEVEL SECURITY;
ALTER TABLE mail_notifications FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON mail_notifications
    USING (tenant_id = nullif(current_setting('app.tenant_id', true), '')::uuid)
    WITH CHECK (tenant_id = nullif(current_setting('app.tenant_id', true), '')::uuid);
GRANT SELECT, INSERT, UPDATE ON mail_notifications TO helpdesk_runtime;

-- The appending statement that enqueues `mail.send` (0580) also enqueues `mail.notify`
-- for the events a tenant's settings ask to be told of by mail: a ticket opened
-- (acknowledgement), assigned to someone (assignment), an SLA breached (breach). Still
-- one probe of `mailboxes` for a tenant with none, and one of `tenant_settings` for a
-- tenant with a mailbox; the job decides recipients and mailbox after the commit.
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
     WHERE (n.type = 'TicketOpened' AND notices ->> 'acknowledgement' = 'true')
        OR (n.type = 'TicketAssigned' AND notices ->> 'assignment' = 'true'
            AND n.data ->> 'assignee' IS NOT NULL)
        OR (n.type = 'SlaBreached' AND notices ->> 'breach' = 'true')
     ORDER BY n.seq;
    RETURN NULL;
END
$$;
REVOKE ALL ON FUNCTION events_schedule_mail() FROM PUBLIC;
