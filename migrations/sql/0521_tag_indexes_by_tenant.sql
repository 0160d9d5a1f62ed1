-- requires extension: btree_gin
--
-- The tag indexes of tickets (0010) and contacts (0200) held every tenant's tags in one
-- GIN tree, so a tag filter found every tenant's rows carrying the tag and dropped the
-- other tenants' after the index. Like the search indexes (0520), they now lead with
-- the tenant: a GIN index over (tenant_id, tags), whose scan intersects the tenant's
-- entries with the tag's inside the index (btree_gin gives uuid its GIN operator
-- class).
CREATE INDEX tickets_tenant_tags ON tickets USING gin (tenant_id, tags);
CREATE INDEX contacts_tenant_tags ON contacts USING gin (tenant_id, tags);
DROP INDEX tickets_tags;
DROP INDEX contacts_tags;
