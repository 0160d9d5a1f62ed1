-- Async projections: per (projection, tenant) checkpoints and the analytics read models.
--
-- A checkpoint is moved in the same transaction as the rows its batch wrote, with a
-- compare-and-set on the previous value, so each event takes effect exactly once.
-- Projector workers find and claim checkpoints across tenants through the worker
-- policy (app.worker = 'on'); the events and read-model rows of a claimed tenant are
-- then written under that tenant's own context.

CREATE TABLE projection_checkpoints (
    projection  text NOT NULL CHECK (length(projection) BETWEEN 1 AND 100),
    tenant_id   uuid NOT NULL REFERENCES tenants (id),
    last_seq    bigint NOT NULL DEFAULT 0 CHECK (last_seq >= 0),
    rebuilding  boolean NOT NULL DEFAULT false,
    updated_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (projection, tenant_id)
);
CREATE INDEX projection_checkpoints_tenant ON projection_checkpoints (tenant_id);

-- Per ticket. Besides the metrics it keeps what later events need (state and since
-- when, time spent open so far) so a batch never has to re-read the stream.
CREATE TABLE analytics_tickets (
    tenant_id                uuid NOT NULL REFERENCES tenants (id),
    ticket_id                uuid NOT NULL,
    priority                 text NOT NULL,
    source                   text NOT NULL,
    state                    text NOT NULL,
    assignee                 text,
    created_at               timestamptz NOT NULL,
    state_since              timestamptz NOT NULL,
    first_reply_at           timestamptz,
    first_reply_ms           bigint,
    first_reply_business_ms  bigint,
    solved_at                timestamptz,
    solves                   integer NOT NULL DEFAULT 0,
    resolution_ms            bigint,
    open_ms                  bigint NOT NULL DEFAULT 0,
    resolution_open_ms       bigint,
    reopens                  integer NOT NULL DEFAULT 0,
    public_agent_replies     integer NOT NULL DEFAULT 0,
    breaches_first_response  integer NOT NULL DEFAULT 0,
    breaches_next_reply      integer NOT NULL DEFAULT 0,
    breaches_resolution      integer NOT NULL DEFAULT 0,
    last_seq                 bigint NOT NULL,
    PRIMARY KEY (tenant_id, ticket_id)
);
CREATE INDEX analytics_tickets_created ON analytics_tickets (tenant_id, created_at);
CREATE INDEX analytics_tickets_backlog ON analytics_tickets (tenant_id, state)
    WHERE state IN ('open', 'pending', 'on_hold');

-- Per UTC day of the event's business time, by the ticket's priority and source then.
CREATE TABLE analytics_daily (
    tenant_id  uuid NOT NULL REFERENCES tenants (id),
    day        date NOT NULL,
    priority   text NOT NULL,
    source     text NOT NULL,
    created    integer NOT NULL DEFAULT 0,
    solved     integer NOT NULL DEFAULT 0,
    reopened   integer NOT NULL DEFAULT 0,
    breached   integer NOT NULL DEFAULT 0,
    PRIMARY KEY (tenant_id, day, priority, source)
);

CREATE TABLE analytics_agent_daily (
    tenant_id  uuid NOT NULL REFERENCES tenants (id),
    day        date NOT NULL,
    agent_id   text NOT NULL,
    assigned   integer NOT NULL DEFAULT 0,
    replies    integer NOT NULL DEFAULT 0,
    solved     integer NOT NULL DEFAULT 0,
    PRIMARY KEY (tenant_id, day, agent_id)
);

ALTER TABLE projection_checkpoints ENABLE ROW LEVEL SECURITY;
ALTER TABLE projection_checkpoints FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON projection_checkpoints
    USING (tenant_id = nullif(current_setting('app.tenant_id', true), '')::uuid)
    WITH CHECK (tenant_id = nullif(current_setting('app.tenant_id', true), '')::uuid);
-- Projector workers create missing checkpoints and claim those behind the head.
CREATE POLICY worker_all ON projection_checkpoints
    USING (current_setting('app.worker', true) = 'on')
    WITH CHECK (current_setting('app.worker', true) = 'on');

ALTER TABLE analytics_tickets ENABLE ROW LEVEL SECURITY;
ALTER TABLE analytics_tickets FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON analytics_tickets
    USING (tenant_id = nullif(current_setting('app.tenant_id', true), '')::uuid)
    WITH CHECK (tenant_id = nullif(current_setting('app.tenant_id', true), '')::uuid);

ALTER TABLE analytics_daily ENABLE ROW LEVEL SECURITY;
ALTER TABLE analytics_daily FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON analytics_daily
    USING (tenant_id = nullif(current_setting('app.tenant_id', true), '')::uuid)
    WITH CHECK (tenant_id = nullif(current_setting('app.tenant_id', true), '')::uuid);

ALTER TABLE analytics_agent_daily ENABLE ROW LEVEL SECURITY;
ALTER TABLE analytics_agent_daily FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON analytics_agent_daily
    USING (tenant_id = nullif(current_setting('app.tenant_id', true), '')::uuid)
    WITH CHECK (tenant_id = nullif(current_setting('app.tenant_id', true), '')::uuid);

GRANT SELECT, INSERT, UPDATE ON projection_checkpoints TO helpdesk_runtime;
GRANT SELECT, INSERT, UPDATE, DELETE
    ON analytics_tickets, analytics_daily, analytics_agent_daily TO helpdesk_runtime;
