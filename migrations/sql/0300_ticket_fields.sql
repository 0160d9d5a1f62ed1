-- Ticket fields: the tenant's field definitions (an inline read model of the field
-- streams, written in the command's own transaction) and each ticket's values.

-- One row per field: the definition as its stream folds it now. Tickets' commands
-- check values against these rows, so a command sees the definitions as they are
-- when it is decided. The key is the field's identity and is never reused (nothing
-- deletes a row; a field is deactivated).
CREATE TABLE ticket_fields (
    tenant_id   uuid NOT NULL REFERENCES tenants (id),
    key         text NOT NULL,
    stream_id   uuid NOT NULL,
    type        text NOT NULL,
    version     integer NOT NULL CHECK (version >= 1),
    definition  jsonb NOT NULL,
    created_at  timestamptz NOT NULL,
    updated_at  timestamptz NOT NULL,
    PRIMARY KEY (tenant_id, key)
);

ALTER TABLE ticket_fields ENABLE ROW LEVEL SECURITY;
ALTER TABLE ticket_fields FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON ticket_fields
    USING (tenant_id = nullif(current_setting('app.tenant_id', true), '')::uuid)
    WITH CHECK (tenant_id = nullif(current_setting('app.tenant_id', true), '')::uuid);
GRANT SELECT, INSERT, UPDATE ON ticket_fields TO helpdesk_runtime;

-- A ticket's values by key, as its stream folds them (the list filters on them).
ALTER TABLE tickets ADD COLUMN fields jsonb NOT NULL DEFAULT '{}';

-- Analytics: each ticket's values after the last applied event (summary groups by
-- them, as it does by the ticket's priority then), and per UTC day the counters of
-- analytics_daily by the values of checkbox, dropdown and multiselect fields the
-- ticket held at the event's time (as analytics_daily splits by priority then). A
-- multiselect value counts once under each of its options.
ALTER TABLE analytics_tickets ADD COLUMN fields jsonb NOT NULL DEFAULT '{}';

CREATE TABLE analytics_field_daily (
    tenant_id  uuid NOT NULL REFERENCES tenants (id),
    field_key  text NOT NULL,
    day        date NOT NULL,
    value      text NOT NULL,
    created    integer NOT NULL DEFAULT 0,
    solved     integer NOT NULL DEFAULT 0,
    reopened   integer NOT NULL DEFAULT 0,
    breached   integer NOT NULL DEFAULT 0,
    PRIMARY KEY (tenant_id, field_key, day, value)
);

ALTER TABLE analytics_field_daily ENABLE ROW LEVEL SECURITY;
ALTER TABLE analytics_field_daily FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON analytics_field_daily
    USING (tenant_id = nullif(current_setting('app.tenant_id', true), '')::uuid)
    WITH CHECK (tenant_id = nullif(current_setting('app.tenant_id', true), '')::uuid);
GRANT SELECT, INSERT, UPDATE, DELETE ON analytics_field_daily TO helpdesk_runtime;
