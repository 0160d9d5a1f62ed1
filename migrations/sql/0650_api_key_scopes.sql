-- API keys may be issued with scopes: the permissions (api/http/access.py) the key
-- holds, a subset of its role's. NULL is an unscoped key, which holds all its role's;
-- an empty list is refused on issue (a key that could run nothing).
ALTER TABLE api_keys ADD COLUMN scopes text[]
    CHECK (scopes IS NULL OR cardinality(scopes) BETWEEN 1 AND 200);

-- The lookup answers the scopes with the rest, in the one round trip it already takes
-- (and only on a cache miss: api/http/keycache.py), so a scoped key costs no more.
-- The result gains a column, which CREATE OR REPLACE cannot do.
DROP FUNCTION api_key_lookup(bytea);
CREATE FUNCTION api_key_lookup(p_key_hash bytea)
RETURNS TABLE (tenant_id uuid, key_id uuid, role text, agent_id uuid, agent_active boolean,
               scopes text[])
LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = pg_catalog, public
AS $$
    SELECT k.tenant_id, k.id, k.role, k.agent_id, a.active, k.scopes
      FROM api_keys k
      LEFT JOIN agents a ON a.tenant_id = k.tenant_id AND a.id = k.agent_id
     WHERE k.key_hash = p_key_hash AND k.revoked_at IS NULL
$$;

REVOKE ALL ON FUNCTION api_key_lookup(bytea) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION api_key_lookup(bytea) TO helpdesk_runtime;
