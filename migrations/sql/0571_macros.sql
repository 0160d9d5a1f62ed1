-- Macros and canned replies: the inline read model of the macro streams
-- (domain/macro.py), written in the same transaction as their events.

CREATE TABLE macros (
    tenant_id   uuid NOT NULL REFERENCES tenants (id),
    id          uuid NOT NULL,
    -- The agent whose personal macro it is; NULL: shared by the tenant.
    owner_id    uuid,
    name        text NOT NULL,
    text        text,
    visibility  text NOT NULL CHECK (visibility IN ('public', 'internal')),
    actions     jsonb NOT NULL,
    version     integer NOT NULL CHECK (version >= 1),
    created_at  timestamptz NOT NULL,
    updated_at  timestamptz NOT NULL,
    PRIMARY KEY (tenant_id, id)
);
CREATE INDEX macros_listing ON macros (tenant_id, created_at, id);

ALTER TABLE macros ENABLE ROW LEVEL SECURITY;
ALTER TABLE macros FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON macros
    USING (tenant_id = nullif(current_setting('app.tenant_id', true), '')::uuid)
    WITH CHECK (tenant_id = nullif(current_setting('app.tenant_id', true), '')::uuid);
GRANT SELECT, INSERT, UPDATE ON macros TO helpdesk_runtime;
