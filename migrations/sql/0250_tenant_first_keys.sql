-- Every key of a tenant table begins with tenant_id, so the schema can be distributed
-- by tenant (Citus: a primary key or unique constraint must contain the distribution
-- column; tests/integration/test_citus_ready.py checks the rule on the catalog).

-- projection_checkpoints was keyed (projection, tenant_id). Every read of it names
-- both or the tenant alone; the tenant index becomes the new key's prefix.
ALTER TABLE projection_checkpoints
    DROP CONSTRAINT projection_checkpoints_pkey,
    ADD CONSTRAINT projection_checkpoints_pkey PRIMARY KEY (tenant_id, projection);
DROP INDEX projection_checkpoints_tenant;

-- api_keys.key_hash was unique across tenants, which no distributed table can enforce.
-- A hash is the sha256 of 256 random bits, so it is unique in practice; the lookup
-- (api_key_lookup, before the tenant is known) keeps an index of its own, and a hash
-- that ever matched two keys is refused as unknown by the caller (api/http/keycache.py).
ALTER TABLE api_keys
    DROP CONSTRAINT api_keys_key_hash_key,
    ADD CONSTRAINT api_keys_tenant_key_hash_key UNIQUE (tenant_id, key_hash);
CREATE INDEX api_keys_key_hash ON api_keys (key_hash);
