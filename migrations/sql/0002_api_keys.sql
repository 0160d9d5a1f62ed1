-- API keys: stored as sha256 of the secret, never the secret itself.
-- The lookup happens before the tenant is known, so it goes through one
-- SECURITY DEFINER function with a pinned search_path; a policy scoped TO the owner
-- role lets that function (and only code running as the owner) see every tenant's
-- keys. The runtime role reads and writes keys only under its own tenant context.

CREATE TABLE api_keys (
    tenant_id   uuid NOT NULL REFERENCES tenants (id),
    id          uuid NOT NULL,
    name        text NOT NULL CHECK (length(name) BETWEEN 1 AND 200),
    role        text NOT NULL CHECK (role IN ('admin', 'agent', 'intake', 'analyst', 'auditor')),
    prefix      text NOT NULL,
    key_hash    bytea NOT NULL UNIQUE,
    agent_id    uuid,
    created_at  timestamptz NOT NULL DEFAULT now(),
    revoked_at  timestamptz,
    PRIMARY KEY (tenant_id, id)
);
CREATE INDEX api_keys_listing ON api_keys (tenant_id, created_at, id);

ALTER TABLE api_keys ENABLE ROW LEVEL SECURITY;
ALTER TABLE api_keys FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON api_keys
    USING (tenant_id = nullif(current_setting('app.tenant_id', true), '')::uuid)
    WITH CHECK (tenant_id = nullif(current_setting('app.tenant_id', true), '')::uuid);
CREATE POLICY owner_lookup ON api_keys FOR SELECT TO helpdesk_owner USING (true);

CREATE FUNCTION api_key_lookup(p_key_hash bytea)
RETURNS TABLE (tenant_id uuid, key_id uuid, role text, agent_id uuid)
LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = pg_catalog, public
AS $$
    SELECT k.tenant_id, k.id, k.role, k.agent_id
      FROM api_keys k
     WHERE k.key_hash = p_key_hash AND k.revoked_at IS NULL
$$;

REVOKE ALL ON FUNCTION api_key_lookup(bytea) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION api_key_lookup(bytea) TO helpdesk_runtime;
GRANT SELECT, INSERT, UPDATE ON api_keys TO helpdesk_runtime;
