-- Calendars and SLA policies: the inline read models of their streams
-- (domain/sla_calendar.py, domain/target_policy.py), written in the same transaction
-- as their events.

CREATE TABLE sla_calendars (
    tenant_id   uuid NOT NULL REFERENCES tenants (id),
    id          uuid NOT NULL,
    name        text NOT NULL,
    hours       jsonb NOT NULL,
    version     integer NOT NULL CHECK (version >= 1),
    created_at  timestamptz NOT NULL,
    updated_at  timestamptz NOT NULL,
    PRIMARY KEY (tenant_id, id)
);
CREATE INDEX sla_calendars_listing ON sla_calendars (tenant_id, created_at, id);

-- Every version's hours, never changed: a clock names the calendar version it runs on,
-- and verdicts (analytics, the ticket's clocks) are computed on that version.
CREATE TABLE sla_calendar_versions (
    tenant_id    uuid NOT NULL REFERENCES tenants (id),
    calendar_id  uuid NOT NULL,
    version      integer NOT NULL CHECK (version >= 1),
    hours        jsonb NOT NULL,
    PRIMARY KEY (tenant_id, calendar_id, version)
);

CREATE TABLE sla_policies (
    tenant_id    uuid NOT NULL REFERENCES tenants (id),
    id           uuid NOT NULL,
    name         text NOT NULL,
    position     integer NOT NULL CHECK (position >= 0),
    "default"    boolean NOT NULL,
    conditions   jsonb NOT NULL,
    targets      jsonb NOT NULL,
    calendar_id  uuid,
    version      integer NOT NULL CHECK (version >= 1),
    created_at   timestamptz NOT NULL,
    updated_at   timestamptz NOT NULL,
    PRIMARY KEY (tenant_id, id),
    FOREIGN KEY (tenant_id, calendar_id) REFERENCES sla_calendars (tenant_id, id)
);
-- At most one default per tenant, whatever the handler's checks.
CREATE UNIQUE INDEX sla_policies_one_default ON sla_policies (tenant_id) WHERE "default";
CREATE INDEX sla_policies_listing ON sla_policies (tenant_id, created_at, id);

ALTER TABLE sla_calendars ENABLE ROW LEVEL SECURITY;
ALTER TABLE sla_calendars FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON sla_calendars
    USING (tenant_id = nullif(current_setting('app.tenant_id', true), '')::uuid)
    WITH CHECK (tenant_id = nullif(current_setting('app.tenant_id', true), '')::uuid);
GRANT SELECT, INSERT, UPDATE ON sla_calendars TO helpdesk_runtime;

ALTER TABLE sla_calendar_versions ENABLE ROW LEVEL SECURITY;
ALTER TABLE sla_calendar_versions FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON sla_calendar_versions
    USING (tenant_id = nullif(current_setting('app.tenant_id', true), '')::uuid)
    WITH CHECK (tenant_id = nullif(current_setting('app.tenant_id', true), '')::uuid);
GRANT SELECT, INSERT ON sla_calendar_versions TO helpdesk_runtime;

ALTER TABLE sla_policies ENABLE ROW LEVEL SECURITY;
ALTER TABLE sla_policies FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON sla_policies
    USING (tenant_id = nullif(current_setting('app.tenant_id', true), '')::uuid)
    WITH CHECK (tenant_id = nullif(current_setting('app.tenant_id', true), '')::uuid);
GRANT SELECT, INSERT, UPDATE ON sla_policies TO helpdesk_runtime;
