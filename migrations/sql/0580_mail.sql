-- E-mail in and out (docs/email.md): a tenant's mailboxes, the mail they took in and
-- sent, the thread token of each mail ticket, the quarantine of mail that could not be
-- taken in, and the addresses that bounce.

-- A mailbox: an address, the hash of the secret its inbound route takes, and outbound
-- SMTP (NULL: no mail goes out, the mailbox takes mail in only). The SMTP password is
-- sealed by the key-encryption key (Keyring.wrap, bound to the tenant and the mailbox)
-- and named by its fingerprint (kek), as data keys are.
CREATE TABLE mailboxes (
    tenant_id            uuid NOT NULL REFERENCES tenants (id),
    id                   uuid NOT NULL,
    address              text NOT NULL,
    name                 text,
    inbound_secret_hash  bytea NOT NULL,
    smtp                 jsonb,
    smtp_password        bytea,
    kek                  text,
    last_error           text,
    last_error_at        timestamptz,
    last_ok_at           timestamptz,
    version              integer NOT NULL CHECK (version >= 1),
    created_at           timestamptz NOT NULL,
    updated_at           timestamptz NOT NULL,
    PRIMARY KEY (tenant_id, id)
);
CREATE UNIQUE INDEX mailboxes_address ON mailboxes (tenant_id, lower(address));
CREATE INDEX mailboxes_listing ON mailboxes (tenant_id, created_at, id);

-- One row per mail taken in or sent, keyed by its Message-ID: the same mail arriving
-- twice (a retried delivery, two routes) is one row, so one message. An outbound row
-- is made by the first delivery attempt of a ticket message, one per message.
CREATE TABLE mail_messages (
    tenant_id       uuid NOT NULL REFERENCES tenants (id),
    id              uuid NOT NULL,
    mailbox_id      uuid NOT NULL,
    direction       text NOT NULL CHECK (direction IN ('in', 'out')),
    rfc_message_id  text NOT NULL,
    ticket_id       uuid,
    message_id      uuid,
    from_address    text NOT NULL,
    to_addresses    text[] NOT NULL DEFAULT '{}',
    cc_addresses    text[] NOT NULL DEFAULT '{}',
    outcome         text NOT NULL CHECK (outcome IN ('ticket', 'reply', 'follow_up', 'ignored',
                                                     'bounce', 'queued', 'sent', 'dead')),
    reason          text,
    attempts        integer NOT NULL DEFAULT 0,
    created_at      timestamptz NOT NULL,
    sent_at         timestamptz,
    PRIMARY KEY (tenant_id, id),
    FOREIGN KEY (tenant_id, mailbox_id) REFERENCES mailboxes (tenant_id, id)
);
CREATE UNIQUE INDEX mail_messages_rfc_id ON mail_messages (tenant_id, rfc_message_id);
CREATE UNIQUE INDEX mail_messages_outbound ON mail_messages (tenant_id, message_id)
    WHERE direction = 'out';
CREATE INDEX mail_messages_ticket ON mail_messages (tenant_id, ticket_id, created_at, id);
-- The per-sender hourly cap counts a sender's recent mail.
CREATE INDEX mail_messages_sender ON mail_messages (tenant_id, lower(from_address), created_at)
    WHERE direction = 'in';

-- A mail ticket: the mailbox it came in by and the token of its Reply-To address
-- (support+<token>@...). Public staff replies on these tickets are mailed.
CREATE TABLE mail_threads (
    tenant_id   uuid NOT NULL REFERENCES tenants (id),
    ticket_id   uuid NOT NULL,
    mailbox_id  uuid NOT NULL,
    token       text NOT NULL,
    created_at  timestamptz NOT NULL,
    PRIMARY KEY (tenant_id, ticket_id),
    FOREIGN KEY (tenant_id, mailbox_id) REFERENCES mailboxes (tenant_id, id)
);
CREATE UNIQUE INDEX mail_threads_token ON mail_threads (tenant_id, token);

-- Mail that could not be taken in, kept whole (sealed by the key-encryption key) with
-- the reason, until an admin retries or discards it.
CREATE TABLE mail_quarantine (
    tenant_id    uuid NOT NULL REFERENCES tenants (id),
    id           uuid NOT NULL,
    mailbox_id   uuid NOT NULL,
    raw          bytea NOT NULL,
    kek          text NOT NULL,
    size         integer NOT NULL,
    reason       text NOT NULL,
    attempts     integer NOT NULL DEFAULT 1,
    received_at  timestamptz NOT NULL,
    retried_at   timestamptz,
    PRIMARY KEY (tenant_id, id),
    FOREIGN KEY (tenant_id, mailbox_id) REFERENCES mailboxes (tenant_id, id)
);
CREATE INDEX mail_quarantine_listing ON mail_quarantine (tenant_id, mailbox_id, received_at, id);

-- Addresses a delivery status notification said are undeliverable (a hard bounce).
CREATE TABLE mail_bounces (
    tenant_id   uuid NOT NULL REFERENCES tenants (id),
    address     text NOT NULL,
    status      text,
    reason      text,
    bounced_at  timestamptz NOT NULL,
    PRIMARY KEY (tenant_id, address)
);

DO $$
DECLARE t text;
BEGIN
    FOREACH t IN ARRAY ARRAY['mailboxes', 'mail_messages', 'mail_threads', 'mail_quarantine',
                             'mail_bounces'] LOOP
        EXECUTE format('ALTER TABLE %I ENABLE ROW LEVEL SECURITY', t);
        EXECUTE format('ALTER TABLE %I FORCE ROW LEVEL SECURITY', t);
        EXECUTE format($p$CREATE POLICY tenant_isolation ON %I
            USING (tenant_id = nullif(current_setting('app.tenant_id', true), '')::uuid)
            WITH CHECK (tenant_id = nullif(current_setting('app.tenant_id', true), '')::uuid)$p$, t);
    END LOOP;
END
$$;
GRANT SELECT, INSERT, UPDATE ON mailboxes, mail_messages, mail_threads TO helpdesk_runtime;
GRANT SELECT, INSERT, UPDATE, DELETE ON mail_quarantine, mail_bounces TO helpdesk_runtime;

-- The inbound route names a mailbox before its tenant is known: this maps the mailbox
-- to its tenant and the hash its secret must match (like api_key_lookup, 0090: it runs
-- as the owner, which a read-only policy lets read mailboxes; the runtime role is never
-- a member of the owner role). mail_health reads them the same way.
CREATE POLICY owner_lookup ON mailboxes FOR SELECT TO helpdesk_owner USING (true);
CREATE FUNCTION mailbox_lookup(p_mailbox uuid)
RETURNS TABLE (tenant_id uuid, inbound_secret_hash bytea)
LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = pg_catalog, public
AS $$
    SELECT m.tenant_id, m.inbound_secret_hash FROM mailboxes m WHERE m.id = p_mailbox
$$;
REVOKE ALL ON FUNCTION mailbox_lookup(uuid) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mailbox_lookup(uuid) TO helpdesk_runtime;

-- Readiness: how many mailboxes there are and how many last failed, across tenants,
-- without a row of any tenant.
CREATE FUNCTION mail_health()
RETURNS TABLE (mailboxes bigint, failing bigint)
LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = pg_catalog, public
AS $$
    SELECT count(*),
           count(*) FILTER (WHERE m.last_error_at IS NOT NULL
                              AND (m.last_ok_at IS NULL OR m.last_ok_at < m.last_error_at))
      FROM mailboxes m
$$;
REVOKE ALL ON FUNCTION mail_health() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mail_health() TO helpdesk_runtime;

-- A public staff reply on a mail ticket is mailed by a `mail.send` job, enqueued by the
-- appending statement itself (as webhook deliveries are, 0111): the job exists exactly
-- when the message committed, and the request never waits for an SMTP server. One
-- primary-key probe of `mailboxes` per appending statement for a tenant with none.
CREATE FUNCTION events_schedule_mail() RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, public
AS $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM mailboxes m
                    WHERE m.tenant_id = nullif(current_setting('app.tenant_id', true), '')::uuid) THEN
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
    RETURN NULL;
END
$$;
REVOKE ALL ON FUNCTION events_schedule_mail() FROM PUBLIC;
CREATE TRIGGER events_schedule_mail AFTER INSERT ON events
    REFERENCING NEW TABLE AS new_events
    FOR EACH STATEMENT EXECUTE FUNCTION events_schedule_mail();
