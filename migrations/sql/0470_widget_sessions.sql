-- The embeddable widget: a visitor on one of the tenant's allowed origins (the
-- tenant settings' widget_origins) opens an anonymous, short-lived widget session
-- bound to the e-mail they typed, and with it opens tickets and follows them.
--
-- Nobody checks that the e-mail is the visitor's, so a widget session is NOT the
-- contact: it reaches only the tickets it opened itself (widget_tickets) and their
-- follow-ups, never the contact's other tickets. A transaction acting for a widget
-- session (actor kind 'widget', actor id = the session, armed like every actor: the
-- database stamps its events so) is held to that by row-level security, whatever SQL
-- runs, as a customer's is to their contact by the contact_scope policies of 0460.
--
-- Tenant tables like the others: tenant_id first in every key, foreign keys carry it,
-- row-level security on it; nothing is deleted (sessions expire or are revoked).

CREATE TABLE widget_sessions (
    tenant_id    uuid NOT NULL REFERENCES tenants (id),
    id           uuid NOT NULL,
    -- '' once the contact it resolved to is erased (handlers/erasure.py).
    email        text NOT NULL CHECK (length(email) <= 254),
    origin       text NOT NULL CHECK (origin ~ '^https?://[^/?#@ ]+$'),
    created_at   timestamptz NOT NULL,
    expires_at   timestamptz NOT NULL,
    revoked_at   timestamptz,
    PRIMARY KEY (tenant_id, id),
    CHECK (expires_at > created_at)
);

-- The tickets a widget session opened, and the follow-ups of those (a reply on a
-- closed ticket opens one). The row goes in before the ticket's own, in the same
-- transaction: the ticket's row must already pass the widget scope to be written.
CREATE TABLE widget_tickets (
    tenant_id    uuid NOT NULL REFERENCES tenants (id),
    session_id   uuid NOT NULL,
    ticket_id    uuid NOT NULL,
    created_at   timestamptz NOT NULL,
    PRIMARY KEY (tenant_id, session_id, ticket_id),
    FOREIGN KEY (tenant_id, session_id) REFERENCES widget_sessions (tenant_id, id),
    -- Checked at commit: the ticket's row is written after this one.
    FOREIGN KEY (tenant_id, ticket_id) REFERENCES tickets (tenant_id, id)
        DEFERRABLE INITIALLY DEFERRED
);
CREATE INDEX widget_tickets_ticket ON widget_tickets (tenant_id, ticket_id);

ALTER TABLE widget_sessions ENABLE ROW LEVEL SECURITY;
ALTER TABLE widget_sessions FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON widget_sessions
    USING (tenant_id = nullif(current_setting('app.tenant_id', true), '')::uuid)
    WITH CHECK (tenant_id = nullif(current_setting('app.tenant_id', true), '')::uuid);
ALTER TABLE widget_tickets ENABLE ROW LEVEL SECURITY;
ALTER TABLE widget_tickets FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON widget_tickets
    USING (tenant_id = nullif(current_setting('app.tenant_id', true), '')::uuid)
    WITH CHECK (tenant_id = nullif(current_setting('app.tenant_id', true), '')::uuid);

GRANT SELECT, INSERT, UPDATE ON widget_sessions TO helpdesk_runtime;
GRANT SELECT, INSERT ON widget_tickets TO helpdesk_runtime;

-- The widget session a transaction acts for: the armed actor's id when the actor is
-- a widget session, else NULL. Derived from the actor rather than armed apart, as
-- acting_contact() is, so nothing acts for a widget session unscoped; an actor id
-- that is not a uuid fails the cast: refused, never unscoped.
CREATE FUNCTION acting_widget_session() RETURNS uuid
    LANGUAGE sql STABLE PARALLEL SAFE AS $$
    SELECT CASE WHEN current_setting('app.actor_kind', true) = 'widget'
                THEN nullif(current_setting('app.actor_id', true), '')::uuid END
$$;

-- Restrictive, like contact_scope, and written the same way ("actor kind IS DISTINCT
-- FROM" first: see 0460 on the planner's estimate): for any other actor they change
-- nothing. A widget session reads and writes its own session row, its own
-- widget_tickets rows, the tickets those name (or that follow up one they name) and
-- those tickets' public messages; nothing else of these tables.
CREATE POLICY widget_scope ON widget_sessions AS RESTRICTIVE
    USING (current_setting('app.actor_kind', true) IS DISTINCT FROM 'widget'
           OR id = acting_widget_session());
CREATE POLICY widget_scope ON widget_tickets AS RESTRICTIVE
    USING (current_setting('app.actor_kind', true) IS DISTINCT FROM 'widget'
           OR session_id = acting_widget_session());
CREATE POLICY widget_scope ON tickets AS RESTRICTIVE
    USING (current_setting('app.actor_kind', true) IS DISTINCT FROM 'widget'
           OR EXISTS (SELECT 1 FROM widget_tickets w
                       WHERE w.tenant_id = tickets.tenant_id
                         AND w.session_id = acting_widget_session()
                         AND w.ticket_id IN (tickets.id, tickets.follow_up_of)));
CREATE POLICY widget_scope ON messages AS RESTRICTIVE
    USING (current_setting('app.actor_kind', true) IS DISTINCT FROM 'widget'
           OR (visibility = 'public'
               AND EXISTS (SELECT 1 FROM tickets t
                             JOIN widget_tickets w
                               ON w.tenant_id = t.tenant_id
                              AND w.ticket_id IN (t.id, t.follow_up_of)
                            WHERE t.tenant_id = messages.tenant_id
                              AND t.id = messages.ticket_id
                              AND w.session_id = acting_widget_session())));
