-- The tenant <-> head link, pointed the other way.
--
-- tenant_heads.tenant_id referenced tenants(id). Postgres checks such a key on every
-- update of the referencing row when that row was written earlier in the same
-- transaction, keys unchanged or not: a transaction appending many events updates
-- its tenant's head once per event, so every event but the first paid a foreign-key
-- query (measured with pgbench, 64 events per transaction: 5.0 ms of server CPU with
-- it, 4.2-4.5 ms pointed this way or with none). As the referenced side, the head's
-- updates are checked only when its key changes, which it never does.
--
-- Every tenant still has its head (deferred, so a tenant and its head can be
-- inserted in either order within their transaction). A head without a tenant could
-- only be written by the owner; the operator command writes both together.

ALTER TABLE tenant_heads DROP CONSTRAINT tenant_heads_tenant_id_fkey;
ALTER TABLE tenants ADD CONSTRAINT tenants_head_fkey
    FOREIGN KEY (id) REFERENCES tenant_heads (tenant_id) DEFERRABLE INITIALLY DEFERRED;
