-- Groups (teams of agents): the inline read model of the group streams, written in the
-- same transaction as their events; and the group a ticket is in.

CREATE TABLE groups (
    tenant_id   uuid NOT NULL REFERENCES tenants (id),
    id          uuid NOT NULL,
    name        text NOT NULL,
    -- Agent ids, sorted: a team is small, and its members are read whole.
    members     uuid[] NOT NULL DEFAULT '{}',
    version     integer NOT NULL CHECK (version >= 1),
    created_at  timestamptz NOT NULL,
    updated_at  timestamptz NOT NULL,
    PRIMARY KEY (tenant_id, id)
);
-- A name is unique per tenant regardless of case.
CREATE UNIQUE INDEX groups_name ON groups (tenant_id, lower(name));
CREATE INDEX groups_listing ON groups (tenant_id, created_at, id);

ALTER TABLE groups ENABLE ROW LEVEL SECURITY;
ALTER TABLE groups FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON groups
    USING (tenant_id = nullif(current_setting('app.tenant_id', true), '')::uuid)
    WITH CHECK (tenant_id = nullif(current_setting('app.tenant_id', true), '')::uuid);
GRANT SELECT, INSERT, UPDATE ON groups TO helpdesk_runtime;

-- The ticket's group, kept by Postgres from the folded state the write path already
-- stores, so no statement that writes a ticket has to name it.
ALTER TABLE tickets
    ADD COLUMN group_id uuid GENERATED ALWAYS AS ((state_json ->> 'group_id')::uuid) STORED,
    ADD CONSTRAINT tickets_group_fkey FOREIGN KEY (tenant_id, group_id)
        REFERENCES groups (tenant_id, id);
-- The list's group_id filter walks this one backwards from the cursor, as the
-- unfiltered list walks tickets_keyset (a group's tickets may be most of the tenant's
-- or very few); it also finds the tickets an agent leaving a group still holds.
CREATE INDEX tickets_group_keyset ON tickets (tenant_id, group_id, created_at, id)
    WHERE group_id IS NOT NULL;
