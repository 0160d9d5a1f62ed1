-- Saved views: the inline read model of the view streams (domain/saved_view.py), written
-- in the same transaction as their events.

CREATE TABLE saved_views (
    tenant_id   uuid NOT NULL REFERENCES tenants (id),
    id          uuid NOT NULL,
    -- The agent whose personal view it is; NULL: shared by the tenant.
    owner_id    uuid,
    name        text NOT NULL,
    -- The ticket list's query parameters: {name: value or [values]}.
    filters     jsonb NOT NULL,
    version     integer NOT NULL CHECK (version >= 1),
    created_at  timestamptz NOT NULL,
    updated_at  timestamptz NOT NULL,
    PRIMARY KEY (tenant_id, id)
);
CREATE INDEX saved_views_listing ON saved_views (tenant_id, created_at, id);

ALTER TABLE saved_views ENABLE ROW LEVEL SECURITY;
ALTER TABLE saved_views FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON saved_views
    USING (tenant_id = nullif(current_setting('app.tenant_id', true), '')::uuid)
    WITH CHECK (tenant_id = nullif(current_setting('app.tenant_id', true), '')::uuid);
GRANT SELECT, INSERT, UPDATE ON saved_views TO helpdesk_runtime;
