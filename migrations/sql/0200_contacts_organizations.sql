-- Inline read models of the contact and organization streams, written in the same
-- transaction as their events, and the ticket columns that link a ticket to its
-- requester's contact and that contact's organization.

CREATE TABLE organizations (
    tenant_id   uuid NOT NULL REFERENCES tenants (id),
    id          uuid NOT NULL,
    version     integer NOT NULL CHECK (version >= 1),
    name        text NOT NULL,
    -- What "name unique regardless of case" compares.
    name_key    text GENERATED ALWAYS AS (lower(name)) STORED,
    domains     text[] NOT NULL DEFAULT '{}',
    created_at  timestamptz NOT NULL,
    updated_at  timestamptz NOT NULL,
    PRIMARY KEY (tenant_id, id),
    CONSTRAINT organizations_name_key UNIQUE (tenant_id, name_key)
);
CREATE INDEX organizations_keyset ON organizations (tenant_id, created_at, id);

-- Which organization holds an e-mail domain: one at most, so a new contact joins
-- exactly one (the key refuses a domain two organizations claim).
CREATE TABLE organization_domains (
    tenant_id        uuid NOT NULL REFERENCES tenants (id),
    domain           text NOT NULL,
    organization_id  uuid NOT NULL,
    PRIMARY KEY (tenant_id, domain),
    FOREIGN KEY (tenant_id, organization_id) REFERENCES organizations (tenant_id, id)
);
CREATE INDEX organization_domains_organization
    ON organization_domains (tenant_id, organization_id);

CREATE TABLE contacts (
    tenant_id        uuid NOT NULL REFERENCES tenants (id),
    id               uuid NOT NULL,
    version          integer NOT NULL CHECK (version >= 1),
    email            text NOT NULL,
    -- Unique regardless of case; a merged contact keeps its e-mail, so the address
    -- still finds it and, through merged_into, the survivor.
    email_key        text GENERATED ALWAYS AS (lower(email)) STORED,
    email_domain     text GENERATED ALWAYS AS (lower(split_part(email, '@', 2))) STORED,
    name             text,
    phone            text,
    external_id      text,
    organization_id  uuid,
    tags             text[] NOT NULL DEFAULT '{}',
    merged_into      uuid,
    created_at       timestamptz NOT NULL,
    updated_at       timestamptz NOT NULL,
    PRIMARY KEY (tenant_id, id),
    CONSTRAINT contacts_email_key UNIQUE (tenant_id, email_key),
    CONSTRAINT contacts_external_id_key UNIQUE (tenant_id, external_id),
    -- merged_into names a contact of the same tenant; no foreign key for it, as a
    -- table referencing itself cannot be ordered among the distributed tables.
    FOREIGN KEY (tenant_id, organization_id) REFERENCES organizations (tenant_id, id)
);
CREATE INDEX contacts_keyset ON contacts (tenant_id, created_at, id);
CREATE INDEX contacts_organization ON contacts (tenant_id, organization_id, created_at, id);
CREATE INDEX contacts_domain ON contacts (tenant_id, email_domain);
CREATE INDEX contacts_tags ON contacts USING gin (tags);

-- A ticket's contact, and that contact's organization (kept with the contact: moving
-- a contact moves its tickets' organization), for the list filters.
ALTER TABLE tickets
    ADD COLUMN contact_id uuid,
    ADD COLUMN organization_id uuid,
    ADD FOREIGN KEY (tenant_id, contact_id) REFERENCES contacts (tenant_id, id);
CREATE INDEX tickets_contact ON tickets (tenant_id, contact_id, created_at, id);
CREATE INDEX tickets_organization ON tickets (tenant_id, organization_id, created_at, id);

ALTER TABLE organizations ENABLE ROW LEVEL SECURITY;
ALTER TABLE organizations FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON organizations
    USING (tenant_id = nullif(current_setting('app.tenant_id', true), '')::uuid)
    WITH CHECK (tenant_id = nullif(current_setting('app.tenant_id', true), '')::uuid);

ALTER TABLE organization_domains ENABLE ROW LEVEL SECURITY;
ALTER TABLE organization_domains FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON organization_domains
    USING (tenant_id = nullif(current_setting('app.tenant_id', true), '')::uuid)
    WITH CHECK (tenant_id = nullif(current_setting('app.tenant_id', true), '')::uuid);

ALTER TABLE contacts ENABLE ROW LEVEL SECURITY;
ALTER TABLE contacts FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON contacts
    USING (tenant_id = nullif(current_setting('app.tenant_id', true), '')::uuid)
    WITH CHECK (tenant_id = nullif(current_setting('app.tenant_id', true), '')::uuid);

GRANT SELECT, INSERT, UPDATE ON organizations, contacts TO helpdesk_runtime;
-- A domain an organization gives up is deleted.
GRANT SELECT, INSERT, DELETE ON organization_domains TO helpdesk_runtime;
