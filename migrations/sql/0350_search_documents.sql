-- Full-text search over the desk, in Postgres (projections/search.py).
--
-- One row per searchable thing, named by its kind (`ticket`, `contact`,
-- `organization`), written in the command's own transaction like the other inline
-- read models. Two vectors: `document` holds what any reader of the thing may
-- see; `staff_document` adds what only agents and admins may (a ticket's internal
-- notes), so the rule is which column a search reads, not a filter that could be
-- forgotten. Each is indexed on its own (GIN) and built with the tenant's
-- text-search configuration (settings `text_search`).
CREATE TABLE search_documents (
    tenant_id       uuid NOT NULL REFERENCES tenants (id),
    kind            text NOT NULL CHECK (kind IN ('ticket', 'contact', 'organization')),
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

-- Searching goes through this function, not through the table. Under row-level
-- security the planner may only use a condition as an index condition if its
-- operator is leakproof, and the text-match operator (@@) is not: a search as the
-- runtime role reads every row of the tenant. The function runs as the owner, for
-- whom a SELECT policy opens the table (as for the key lookup, 0002), and names the
-- tenant itself, from the transaction's own app.tenant_id: exactly the rows the
-- runtime role's policy shows, found through the GIN index. `staff` chooses the
-- vector with internal notes; the other is never read then.
CREATE POLICY owner_search ON search_documents FOR SELECT TO helpdesk_owner USING (true);

CREATE FUNCTION search_matches(p_kind text, p_query tsquery, p_staff boolean)
RETURNS TABLE (id uuid, rank real)
LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = pg_catalog, public
AS $$
    SELECT s.id, ts_rank(s.staff_document, p_query)
      FROM search_documents s
     WHERE p_staff
       AND s.tenant_id = nullif(current_setting('app.tenant_id', true), '')::uuid
       AND s.kind = p_kind AND s.staff_document @@ p_query
    UNION ALL
    SELECT s.id, ts_rank(s.document, p_query)
      FROM search_documents s
     WHERE NOT p_staff
       AND s.tenant_id = nullif(current_setting('app.tenant_id', true), '')::uuid
       AND s.kind = p_kind AND s.document @@ p_query
$$;

REVOKE ALL ON FUNCTION search_matches(text, tsquery, boolean) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION search_matches(text, tsquery, boolean) TO helpdesk_runtime;

-- `GET /v1/tickets?updated_after=` for pollers: the tickets changed since a moment.
CREATE INDEX tickets_updated ON tickets (tenant_id, updated_at);
