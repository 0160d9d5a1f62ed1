-- Customers sign in to the portal: a contact gains a login (an argon2id hash) by
-- spending a single-use password link that staff produce, and a sign-in opens a
-- contact session. A transaction acting as a customer (actor kind 'customer', actor
-- id = the contact, armed like every actor) sees only that contact's tickets and their
-- public messages: row-level security, not only the routes, keeps a customer from
-- other contacts' tickets and from internal notes.
--
-- Tenant tables like the others: tenant_id first in every key, foreign keys carry it,
-- row-level security on it; nothing is deleted (links are spent, sessions revoked).

CREATE TABLE contact_logins (
    tenant_id      uuid NOT NULL REFERENCES tenants (id),
    contact_id     uuid NOT NULL,
    password_hash  text NOT NULL CHECK (password_hash LIKE '$argon2id$%'),
    set_at         timestamptz NOT NULL,
    updated_at     timestamptz NOT NULL,
    PRIMARY KEY (tenant_id, contact_id),
    FOREIGN KEY (tenant_id, contact_id) REFERENCES contacts (tenant_id, id)
);

-- A password link: staff produce it for a contact, the operator sends it, the contact
-- spends it once before it expires to set a password.
CREATE TABLE contact_password_links (
    tenant_id    uuid NOT NULL REFERENCES tenants (id),
    id           uuid NOT NULL,
    contact_id   uuid NOT NULL,
    token_hash   bytea NOT NULL,
    created_at   timestamptz NOT NULL,
    expires_at   timestamptz NOT NULL,
    spent_at     timestamptz,
    PRIMARY KEY (tenant_id, id),
    UNIQUE (tenant_id, token_hash),
    FOREIGN KEY (tenant_id, contact_id) REFERENCES contacts (tenant_id, id)
);

-- One portal sign-in; expires_at is its absolute end.
CREATE TABLE contact_sessions (
    tenant_id    uuid NOT NULL REFERENCES tenants (id),
    id           uuid NOT NULL,
    contact_id   uuid NOT NULL,
    created_at   timestamptz NOT NULL,
    expires_at   timestamptz NOT NULL,
    revoked_at   timestamptz,
    PRIMARY KEY (tenant_id, id),
    FOREIGN KEY (tenant_id, contact_id) REFERENCES contacts (tenant_id, id)
);
CREATE INDEX contact_sessions_contact ON contact_sessions (tenant_id, contact_id);

ALTER TABLE contact_logins ENABLE ROW LEVEL SECURITY;
ALTER TABLE contact_logins FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON contact_logins
    USING (tenant_id = nullif(current_setting('app.tenant_id', true), '')::uuid)
    WITH CHECK (tenant_id = nullif(current_setting('app.tenant_id', true), '')::uuid);
ALTER TABLE contact_password_links ENABLE ROW LEVEL SECURITY;
ALTER TABLE contact_password_links FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON contact_password_links
    USING (tenant_id = nullif(current_setting('app.tenant_id', true), '')::uuid)
    WITH CHECK (tenant_id = nullif(current_setting('app.tenant_id', true), '')::uuid);
ALTER TABLE contact_sessions ENABLE ROW LEVEL SECURITY;
ALTER TABLE contact_sessions FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON contact_sessions
    USING (tenant_id = nullif(current_setting('app.tenant_id', true), '')::uuid)
    WITH CHECK (tenant_id = nullif(current_setting('app.tenant_id', true), '')::uuid);

GRANT SELECT, INSERT, UPDATE ON contact_logins, contact_password_links, contact_sessions
    TO helpdesk_runtime;

-- The contact a transaction acts for: the armed actor's id when the actor is a
-- customer, else NULL (staff, keys, the scheduler: no contact scope). Derived from the
-- actor rather than armed apart, so nothing can act as a customer unscoped. An actor
-- id that is not a uuid fails the cast: refused, never unscoped.
CREATE FUNCTION acting_contact() RETURNS uuid
    LANGUAGE sql STABLE PARALLEL SAFE AS $$
    SELECT CASE WHEN current_setting('app.actor_kind', true) = 'customer'
                THEN nullif(current_setting('app.actor_id', true), '')::uuid END
$$;

-- Restrictive: these narrow what the tenant policy already lets through, for every
-- command (a customer can neither read nor write another contact's ticket, nor read
-- or write an internal note).
--
-- The first branch is written as "actor kind IS DISTINCT FROM 'customer'" rather than
-- "acting_contact() IS NULL" on purpose: the planner estimates the former true for
-- nearly every row (0.995) and the latter for almost none (0.005), and with that
-- wrong guess staff ticket lists left their keyset index walk for a sort
-- (tests/integration/test_list_plans.py).
CREATE POLICY contact_scope ON tickets AS RESTRICTIVE
    USING (current_setting('app.actor_kind', true) IS DISTINCT FROM 'customer'
           OR contact_id = acting_contact());
CREATE POLICY contact_scope ON messages AS RESTRICTIVE
    USING (current_setting('app.actor_kind', true) IS DISTINCT FROM 'customer'
           OR (visibility = 'public'
               AND EXISTS (SELECT 1 FROM tickets t
                           WHERE t.tenant_id = messages.tenant_id
                             AND t.id = messages.ticket_id
                             AND t.contact_id = acting_contact())));
