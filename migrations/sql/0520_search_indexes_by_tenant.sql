-- requires extension: btree_gin
--
-- The search vectors' GIN indexes (0350) held every tenant's words in one tree: a
-- search found every tenant's matches through the index and dropped the other
-- tenants' rows after it, so a tenant's search slowed with the size of the whole
-- desk. These indexes lead with the tenant and the kind, as every index on a tenant
-- table does (docs/citus.sql): one GIN index over (tenant_id, kind, vector), whose
-- scan intersects the tenant's and the kind's entries with the query's words inside
-- the index. Equality on uuid and text inside a GIN index needs the btree_gin
-- operator classes (a trusted contrib extension, created by the migration runner as
-- the migrating role: the owner role may not create extensions, see
-- migrations/runner.py).
CREATE INDEX search_documents_tenant_document
    ON search_documents USING gin (tenant_id, kind, document);
CREATE INDEX search_documents_tenant_staff
    ON search_documents USING gin (tenant_id, kind, staff_document);
DROP INDEX search_documents_document;
DROP INDEX search_documents_staff;
