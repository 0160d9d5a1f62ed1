-- A key that acts as an agent works only while that agent is active: the key lookup
-- also says whether the key's agent is active (NULL: the key acts as no agent), and
-- the API refuses such a key with 403 `agent_inactive` (api/http/auth.py).
--
-- The lookup runs before the tenant is known, as the owner (SECURITY DEFINER), and
-- agents forces row-level security on its owner too; like api_keys (0002), agents gets
-- a read-only policy for the owner role, which only migrations, operator commands and
-- this function use. The runtime role is never a member of it.
CREATE POLICY owner_lookup ON agents FOR SELECT TO helpdesk_owner USING (true);

-- The result gains a column, which CREATE OR REPLACE cannot do.
DROP FUNCTION api_key_lookup(bytea);
CREATE FUNCTION api_key_lookup(p_key_hash bytea)
RETURNS TABLE (tenant_id uuid, key_id uuid, role text, agent_id uuid, agent_active boolean)
LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = pg_catalog, public
AS $$
    SELECT k.tenant_id, k.id, k.role, k.agent_id, a.active
      FROM api_keys k
      LEFT JOIN agents a ON a.tenant_id = k.tenant_id AND a.id = k.agent_id
     WHERE k.key_hash = p_key_hash AND k.revoked_at IS NULL
$$;

REVOKE ALL ON FUNCTION api_key_lookup(bytea) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION api_key_lookup(bytea) TO helpdesk_runtime;
