-- Inline read models of the ticket streams (tickets, messages), written in the same
-- transaction as the events they reflect; the idempotency records of side-effecting
-- requests; and the instance secret that signs list cursors.

CREATE TABLE tickets (
    tenant_id     uuid NOT NULL REFERENCES tenants (id),
    id            uuid NOT NULL,
    version       integer NOT NULL CHECK (version >= 1),
    state         text NOT NULL,
    priority      text NOT NULL,
    source        text NOT NULL,
    assignee      uuid,
    tags          text[] NOT NULL DEFAULT '{}',
    subject       text NOT NULL,
    requester     jsonb NOT NULL,
    follow_up_of  uuid,
    clocks        jsonb NOT NULL,
    -- The whole folded ticket, so a GET or the next command never folds the stream.
    state_json    jsonb NOT NULL,
    created_at    timestamptz NOT NULL,
    updated_at    timestamptz NOT NULL,
    PRIMARY KEY (tenant_id, id)
);
-- Keyset pagination over (created_at, id) within a tenant, in either direction.
CREATE INDEX tickets_keyset ON tickets (tenant_id, created_at, id);
CREATE INDEX tickets_tags ON tickets USING gin (tags);
CREATE INDEX tickets_state ON tickets (tenant_id, state, created_at, id);
CREATE INDEX tickets_assignee ON tickets (tenant_id, assignee, created_at, id);

CREATE TABLE messages (
    tenant_id     uuid NOT NULL REFERENCES tenants (id),
    id            uuid NOT NULL,
    ticket_id     uuid NOT NULL,
    version       integer NOT NULL,
    visibility    text NOT NULL,
    author_kind   text NOT NULL,
    author_id     text NOT NULL,
    body          text NOT NULL,
    created_at    timestamptz NOT NULL,
    PRIMARY KEY (tenant_id, id)
);
CREATE INDEX messages_keyset ON messages (tenant_id, ticket_id, created_at, id);

-- One row per (tenant, API key, method + route template, Idempotency-Key). Written in
-- the command's own transaction, so a command and its recorded answer commit together.
-- Concurrent requests with one key are kept apart by a transaction-level advisory lock
-- on the key (see api/idempotency.py); the row is only ever read under that lock.
CREATE TABLE idempotency_keys (
    tenant_id         uuid NOT NULL REFERENCES tenants (id),
    api_key_id        uuid NOT NULL,
    route             text NOT NULL,
    key               text NOT NULL CHECK (length(key) BETWEEN 1 AND 255),
    fingerprint       bytea NOT NULL,
    response_status   integer NOT NULL,
    response_body     jsonb NOT NULL,
    response_headers  jsonb NOT NULL DEFAULT '{}',
    created_at        timestamptz NOT NULL DEFAULT now(),
    expires_at        timestamptz NOT NULL,
    PRIMARY KEY (tenant_id, api_key_id, route, key)
);
CREATE INDEX idempotency_keys_expiry ON idempotency_keys (expires_at);

-- Secrets of this installation, shared by every process on the database (the cursor
-- signing key must be the same in every API process). Not tenant data.
CREATE TABLE instance_secrets (
    name   text PRIMARY KEY,
    value  bytea NOT NULL CHECK (length(value) >= 16)
);
-- gen_random_uuid() draws from the server's strong random source; two make 244 bits.
INSERT INTO instance_secrets (name, value)
VALUES ('cursor', decode(replace(gen_random_uuid()::text || gen_random_uuid()::text, '-', ''),
                         'hex'));

ALTER TABLE tickets ENABLE ROW LEVEL SECURITY;
ALTER TABLE tickets FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON tickets
    USING (tenant_id = nullif(current_setting('app.tenant_id', true), '')::uuid)
    WITH CHECK (tenant_id = nullif(current_setting('app.tenant_id', true), '')::uuid);

ALTER TABLE messages ENABLE ROW LEVEL SECURITY;
ALTER TABLE messages FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON messages
    USING (tenant_id = nullif(current_setting('app.tenant_id', true), '')::uuid)
    WITH CHECK (tenant_id = nullif(current_setting('app.tenant_id', true), '')::uuid);

ALTER TABLE idempotency_keys ENABLE ROW LEVEL SECURITY;
ALTER TABLE idempotency_keys FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON idempotency_keys
    USING (tenant_id = nullif(current_setting('app.tenant_id', true), '')::uuid)
    WITH CHECK (tenant_id = nullif(current_setting('app.tenant_id', true), '')::uuid);

GRANT SELECT, INSERT, UPDATE ON tickets, messages TO helpdesk_runtime;
GRANT SELECT, INSERT, UPDATE, DELETE ON idempotency_keys TO helpdesk_runtime;
GRANT SELECT ON instance_secrets TO helpdesk_runtime;
