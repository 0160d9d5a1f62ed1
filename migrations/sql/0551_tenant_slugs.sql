-- People sign in with their tenant's slug (`acme`), not its UUID: each tenant has a
-- unique slug the operator chooses (`helpdesk tenants create --slug`) or edits
-- (`helpdesk tenants slug`). Existing tenants get one from their name, with a piece
-- of their id where two names would make the same slug.
--
-- A slug is looked up before the tenant is known (at sign-in), as the owner through
-- `tenant_by_slug` (SECURITY DEFINER, pinned search_path), as API keys are; tenants
-- forces row-level security on its owner too, so the owner gets a read-only policy,
-- which only migrations, operator commands and this function use.

CREATE POLICY owner_lookup ON tenants FOR SELECT TO helpdesk_owner USING (true);

ALTER TABLE tenants ADD COLUMN slug text;

WITH base AS (
    SELECT id, created_at,
           coalesce(nullif(left(trim(BOTH '-' FROM
               regexp_replace(lower(name), '[^a-z0-9]+', '-', 'g')), 40), ''), 'tenant') AS slug
      FROM tenants
), numbered AS (
    SELECT id, slug, row_number() OVER (PARTITION BY slug ORDER BY created_at, id) AS n
      FROM base
)
UPDATE tenants t
   SET slug = trim(BOTH '-' FROM numbered.slug)
              || CASE WHEN numbered.n > 1 THEN '-' || left(t.id::text, 8) ELSE '' END
  FROM numbered
 WHERE numbered.id = t.id;

ALTER TABLE tenants ALTER COLUMN slug SET NOT NULL;
ALTER TABLE tenants ADD CONSTRAINT tenants_slug_check
    CHECK (slug ~ '^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$');
CREATE UNIQUE INDEX tenants_slug ON tenants (slug);

CREATE FUNCTION tenant_by_slug(p_slug text)
RETURNS uuid
LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = pg_catalog, public
AS $$
    SELECT id FROM tenants WHERE slug = lower(p_slug)
$$;

REVOKE ALL ON FUNCTION tenant_by_slug(text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION tenant_by_slug(text) TO helpdesk_runtime;
