-- Slack (docs/slack.md): a tenant's connected channel, the Events API events it took in,
-- the thread of each Slack ticket, and the posts the desk made to those threads.

-- The connection: one per tenant. The bot token and signing secret are sealed by the
-- key-encryption key (Keyring.wrap, bound to the tenant and the row's id) and named by
-- their key's fingerprint, as a mailbox's passwords are. `notices` says which notices
-- are posted to a Slack ticket's thread besides agents' replies.
CREATE TABLE slack_integrations (
    tenant_id           uuid NOT NULL REFERENCES tenants (id),
    id                  uuid NOT NULL,
    channel_id          text NOT NULL,
    bot_user_id         text,
    bot_token           bytea NOT NULL,
    bot_token_kek       text NOT NULL,
    signing_secret      bytea NOT NULL,
    signing_secret_kek  text NOT NULL,
    notices             jsonb NOT NULL DEFAULT '{}',
    last_error          text,
    last_error_at       timestamptz,
    last_ok_at          timestamptz,
    version             integer NOT NULL CHECK (version >= 1),
    created_at          timestamptz NOT NULL,
    updated_at          timestamptz NOT NULL,
    PRIMARY KEY (tenant_id, id)
);
CREATE UNIQUE INDEX slack_integrations_one ON slack_integrations (tenant_id);
-- The Events API route names the integration before its tenant is known.
CREATE INDEX slack_integrations_by_id ON slack_integrations (id);

-- One row per Events API event taken in, keyed by Slack's event_id: Slack retries an
-- event it got no quick answer for, and the retry finds its row and does nothing. The
-- row is written first in the transaction that acts on the event, so a concurrent
-- retry waits on it and then finds it.
CREATE TABLE slack_events (
    tenant_id    uuid NOT NULL REFERENCES tenants (id),
    event_id     text NOT NULL,
    outcome      text NOT NULL CHECK (outcome IN ('pending', 'ticket', 'reply', 'follow_up',
                                                  'ignored')),
    reason       text,
    ticket_id    uuid,
    message_id   uuid,
    received_at  timestamptz NOT NULL,
    PRIMARY KEY (tenant_id, event_id)
);

-- A Slack ticket: the channel and the ts of the message that opened it, which replies
-- in its thread name as their thread_ts. A follow-up of a closed ticket takes the
-- thread over.
CREATE TABLE slack_threads (
    tenant_id   uuid NOT NULL REFERENCES tenants (id),
    ticket_id   uuid NOT NULL,
    channel_id  text NOT NULL,
    thread_ts   text NOT NULL,
    created_at  timestamptz NOT NULL,
    PRIMARY KEY (tenant_id, ticket_id)
);
CREATE UNIQUE INDEX slack_threads_ts ON slack_threads (tenant_id, channel_id, thread_ts);

-- One row per post to a thread (an agent's public reply, a notice), made once by the
-- first attempt of its job, before the call: a row `sent` (with the ts Slack gave it)
-- is never posted again. `in_doubt` is set before each call and cleared by a definite
-- answer; a row left in doubt (a worker killed mid-call, an answer lost) is looked for
-- in the thread before it is posted again.
CREATE TABLE slack_posts (
    tenant_id   uuid NOT NULL REFERENCES tenants (id),
    id          uuid NOT NULL,
    dedupe_key  text NOT NULL,
    kind        text NOT NULL CHECK (kind IN ('reply', 'ticket_opened', 'sla_breached')),
    ticket_id   uuid NOT NULL,
    message_id  uuid,
    channel_id  text NOT NULL,
    thread_ts   text NOT NULL,
    status      text NOT NULL CHECK (status IN ('queued', 'sent', 'dead')),
    in_doubt    boolean NOT NULL DEFAULT false,
    ts          text,
    reason      text,
    attempts    integer NOT NULL DEFAULT 0,
    created_at  timestamptz NOT NULL,
    sent_at     timestamptz,
    PRIMARY KEY (tenant_id, id)
);
CREATE UNIQUE INDEX slack_posts_dedupe ON slack_posts (tenant_id, dedupe_key);
CREATE INDEX slack_posts_ticket ON slack_posts (tenant_id, ticket_id, created_at, id);

DO $$
DECLARE t text;
BEGIN
    FOREACH t IN ARRAY ARRAY['slack_integrations', 'slack_events', 'slack_threads',
                             'slack_posts'] LOOP
        EXECUTE format('ALTER TABLE %I ENABLE ROW LEVEL SECURITY', t);
        EXECUTE format('ALTER TABLE %I FORCE ROW LEVEL SECURITY', t);
        EXECUTE format($p$CREATE POLICY tenant_isolation ON %I
            USING (tenant_id = nullif(current_setting('app.tenant_id', true), '')::uuid)
            WITH CHECK (tenant_id = nullif(current_setting('app.tenant_id', true), '')::uuid)$p$, t);
    END LOOP;
END
$$;
GRANT SELECT, INSERT, UPDATE, DELETE ON slack_integrations TO helpdesk_runtime;
GRANT SELECT, INSERT, UPDATE ON slack_events, slack_threads, slack_posts TO helpdesk_runtime;

-- The Events API route names an integration before its tenant is known: this maps it to
-- its tenant and its sealed signing secret (as mailbox_lookup, 0580, does a mailbox);
-- slack_health counts every tenant's for readiness.
CREATE POLICY owner_lookup ON slack_integrations FOR SELECT TO helpdesk_owner USING (true);
CREATE FUNCTION slack_lookup(p_integration uuid)
RETURNS TABLE (tenant_id uuid, signing_secret bytea, signing_secret_kek text)
LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = pg_catalog, public
AS $$
    SELECT s.tenant_id, s.signing_secret, s.signing_secret_kek
      FROM slack_integrations s WHERE s.id = p_integration
$$;
REVOKE ALL ON FUNCTION slack_lookup(uuid) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION slack_lookup(uuid) TO helpdesk_runtime;

CREATE FUNCTION slack_health()
RETURNS TABLE (integrations bigint, failing bigint)
LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = pg_catalog, public
AS $$
    SELECT count(*),
           count(*) FILTER (WHERE s.last_error_at IS NOT NULL
                              AND (s.last_ok_at IS NULL OR s.last_ok_at < s.last_error_at))
      FROM slack_integrations s
$$;
REVOKE ALL ON FUNCTION slack_health() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION slack_health() TO helpdesk_runtime;

-- An agent's public reply on a Slack ticket, and the notices the integration asks for
-- (a ticket opened, an SLA breached), are posted by a `slack.post` job enqueued by the
-- appending statement itself (as `mail.send` is, 0580): the job exists exactly when the
-- event committed, and the request never waits for Slack. One primary-key probe of
-- `slack_integrations` per appending statement for a tenant without Slack. Imported
-- events post nothing.
CREATE FUNCTION events_schedule_slack() RETURNS trigger
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
      JOIN slack_threads t ON t.tenant_id = n.tenant_id AND t.ticket_id = n.stream_id
     WHERE n.actor_kind <> 'import'
       AND ((n.type = 'MessageAdded' AND n.data ->> 'visibility' = 'public'
             AND n.data -> 'author' ->> 'kind' = 'agent')
            OR (n.type = 'TicketOpened' AND notices ->> 'ticket_opened' = 'true')
            OR (n.type = 'SlaBreached' AND notices ->> 'sla_breached' = 'true'))
     ORDER BY n.seq;
    RETURN NULL;
END
$$;
REVOKE ALL ON FUNCTION events_schedule_slack() FROM PUBLIC;
CREATE TRIGGER events_schedule_slack AFTER INSERT ON events
    REFERENCING NEW TABLE AS new_events
    FOR EACH STATEMENT EXECUTE FUNCTION events_schedule_slack();
