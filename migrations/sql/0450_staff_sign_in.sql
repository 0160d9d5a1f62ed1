-- People sign in: an agent gains a login (an argon2id password hash), sign-ins open
-- sessions whose refresh tokens rotate on every use, and admins invite people with
-- single-use tokens. Every secret is stored as its sha256 (tokens) or argon2id hash
-- (passwords), never as itself.
--
-- Every table is a tenant table: tenant_id first in every key, foreign keys carry it,
-- row-level security on it. Nothing here is read before the tenant is known: sign-in
-- names its tenant, and refresh and invitation tokens carry their tenant's id.

CREATE TABLE agent_logins (
    tenant_id      uuid NOT NULL REFERENCES tenants (id),
    agent_id       uuid NOT NULL,
    password_hash  text NOT NULL CHECK (password_hash LIKE '$argon2id$%'),
    set_at         timestamptz NOT NULL,
    updated_at     timestamptz NOT NULL,
    PRIMARY KEY (tenant_id, agent_id),
    FOREIGN KEY (tenant_id, agent_id) REFERENCES agents (tenant_id, id)
);

-- A session is one sign-in and the family of refresh tokens it rotates through;
-- expires_at is its absolute cap, however often it is refreshed.
CREATE TABLE agent_sessions (
    tenant_id       uuid NOT NULL REFERENCES tenants (id),
    id              uuid NOT NULL,
    agent_id        uuid NOT NULL,
    created_at      timestamptz NOT NULL,
    last_used_at    timestamptz NOT NULL,
    expires_at      timestamptz NOT NULL,
    revoked_at      timestamptz,
    revoked_reason  text CHECK (revoked_reason IN ('sign_out', 'replay')),
    PRIMARY KEY (tenant_id, id),
    FOREIGN KEY (tenant_id, agent_id) REFERENCES agents (tenant_id, id)
);
CREATE INDEX agent_sessions_agent ON agent_sessions (tenant_id, agent_id);

-- Each refresh token is used once: rotated_at is set when it is exchanged, and a
-- second use of a rotated token revokes its session (the whole family).
CREATE TABLE refresh_tokens (
    tenant_id    uuid NOT NULL REFERENCES tenants (id),
    token_hash   bytea NOT NULL,
    session_id   uuid NOT NULL,
    issued_at    timestamptz NOT NULL,
    expires_at   timestamptz NOT NULL,
    rotated_at   timestamptz,
    PRIMARY KEY (tenant_id, token_hash),
    FOREIGN KEY (tenant_id, session_id) REFERENCES agent_sessions (tenant_id, id)
);
CREATE INDEX refresh_tokens_session ON refresh_tokens (tenant_id, session_id);

CREATE TABLE agent_invitations (
    tenant_id    uuid NOT NULL REFERENCES tenants (id),
    id           uuid NOT NULL,
    email        text NOT NULL,
    name         text NOT NULL CHECK (length(name) BETWEEN 1 AND 200),
    role         text NOT NULL CHECK (role IN ('admin', 'agent')),
    token_hash   bytea NOT NULL,
    created_at   timestamptz NOT NULL,
    expires_at   timestamptz NOT NULL,
    accepted_at  timestamptz,
    agent_id     uuid,
    PRIMARY KEY (tenant_id, id),
    UNIQUE (tenant_id, token_hash)
);
CREATE INDEX agent_invitations_listing ON agent_invitations (tenant_id, created_at, id);

ALTER TABLE agent_logins ENABLE ROW LEVEL SECURITY;
ALTER TABLE agent_logins FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON agent_logins
    USING (tenant_id = nullif(current_setting('app.tenant_id', true), '')::uuid)
    WITH CHECK (tenant_id = nullif(current_setting('app.tenant_id', true), '')::uuid);
ALTER TABLE agent_sessions ENABLE ROW LEVEL SECURITY;
ALTER TABLE agent_sessions FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON agent_sessions
    USING (tenant_id = nullif(current_setting('app.tenant_id', true), '')::uuid)
    WITH CHECK (tenant_id = nullif(current_setting('app.tenant_id', true), '')::uuid);
ALTER TABLE refresh_tokens ENABLE ROW LEVEL SECURITY;
ALTER TABLE refresh_tokens FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON refresh_tokens
    USING (tenant_id = nullif(current_setting('app.tenant_id', true), '')::uuid)
    WITH CHECK (tenant_id = nullif(current_setting('app.tenant_id', true), '')::uuid);
ALTER TABLE agent_invitations ENABLE ROW LEVEL SECURITY;
ALTER TABLE agent_invitations FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON agent_invitations
    USING (tenant_id = nullif(current_setting('app.tenant_id', true), '')::uuid)
    WITH CHECK (tenant_id = nullif(current_setting('app.tenant_id', true), '')::uuid);

-- Nothing is ever deleted: sessions and invitations are revoked or spent, in place.
GRANT SELECT, INSERT, UPDATE ON agent_logins, agent_sessions, refresh_tokens,
    agent_invitations TO helpdesk_runtime;

-- A revoked session stops its access tokens at once: every process remembers valid
-- sessions the way it remembers API keys, and forgets them all on this notification
-- (api/http/keycache.py). Only a revocation notifies: a refresh touches last_used_at,
-- which must not empty every process's cache each time someone's token is renewed.
CREATE TRIGGER agent_sessions_revoked AFTER UPDATE ON agent_sessions
    FOR EACH ROW WHEN (NEW.revoked_at IS DISTINCT FROM OLD.revoked_at)
    EXECUTE FUNCTION key_holders_changed();

-- The access-token signing key when ACCESS_TOKEN_SECRET is not set: random, one per
-- database, so every process on it agrees without configuration (like 'cursor').
INSERT INTO instance_secrets (name, value)
VALUES ('access_token',
        decode(replace(gen_random_uuid()::text || gen_random_uuid()::text, '-', ''), 'hex'));
