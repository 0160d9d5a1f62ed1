-- Full-text search over the desk, in Postgres (projections/search.py).
--
-- One row per searchable thing, named by its kind (`ticket` today; contacts and
-- organizations add theirs), written in the command's own transaction like the other
-- inline read models. Two vectors: `document` holds what any reader of the thing may
-- see; `staff_document` adds what only agents and admins may (a ticket's internal
-- notes), so the rule is which column a statement searches, not a filter that could
-- be forgotten. Each is indexed on its own (GIN) and built with the tenant's
-- text-search configuration (settings `text_search`).
CREATE TABLE search_documents (
    tenant_id       uuid NOT NULL REFERENCES tenants (id),
    kind            text NOT NULL CHECK (kind IN ('ticket')),
    id              uuid NOT NULL,
    document        tsvector NOT NULL,
    staff_document  tsvector NOT NULL,
    PRIMARY KEY (tenant_id, kind, id)
);
CREATE INDEX search_documents_document ON search_documents USING gin (document);
CREATE INDEX search_documents_staff ON search_documents USING gin (staff_document);

ALTER TABLE search_documents ENABLE ROW LEVEL SECURITY;
ALTER TABLE search_documents FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON search_documents
    USING (tenant_id = nullif(current_setting('app.tenant_id', true), '')::uuid)
    WITH CHECK (tenant_id = nullif(current_setting('app.tenant_id', true), '')::uuid);

-- DELETE: a re-index of a tenant starts from nothing.
GRANT SELECT, INSERT, UPDATE, DELETE ON search_documents TO helpdesk_runtime;

-- `GET /v1/tickets?updated_after=` for pollers: the tickets changed since a moment.
CREATE INDEX tickets_updated ON tickets (tenant_id, updated_at);
