-- name: api_key_lookup --
-- $1 key_hash
SELECT tenant_id, key_id, role, agent_id FROM api_key_lookup($1)

-- name: insert_api_key --
-- $1 tenant_id, $2 id, $3 name, $4 role, $5 prefix, $6 key_hash, $7 agent_id
INSERT INTO api_keys (tenant_id, id, name, role, prefix, key_hash, agent_id)
VALUES ($1, $2, $3, $4, $5, $6, $7)
RETURNING tenant_id, id, name, role, prefix, agent_id, created_at, revoked_at

-- name: insert_tenant --
-- $1 id, $2 name
INSERT INTO tenants (id, name) VALUES ($1, $2)

-- name: insert_tenant_head --
-- $1 tenant_id
INSERT INTO tenant_heads (tenant_id) VALUES ($1)

-- name: role_safety --
-- (no arguments) what would make row-level security silently not apply to us
SELECT r.rolname AS role,
       r.rolsuper AS superuser,
       r.rolbypassrls AS bypassrls,
       pg_has_role(current_user, 'helpdesk_owner', 'MEMBER') AS owner_member,
       EXISTS (SELECT 1 FROM pg_class c
                WHERE c.relowner = r.oid AND c.relnamespace = 'public'::regnamespace) AS owns
  FROM pg_roles r
 WHERE r.rolname = current_user

-- name: migrated --
-- (no arguments)
SELECT to_regclass('public.schema_migrations') IS NOT NULL
   AND to_regrole('helpdesk_owner') IS NOT NULL

-- name: webhook_get --
-- $1 tenant_id
SELECT url, event_types, enabled, version, updated_at FROM webhooks WHERE tenant_id = $1

-- name: webhook_put --
-- $1 tenant_id, $2 url, $3 secret (NULL keeps the current one), $4 event_types,
-- $5 enabled, $6 updated_at. Postgres checks NOT NULL on the row proposed for
-- insertion before it looks for a conflict, so a NULL secret must not reach VALUES
-- when a row exists: the proposed row carries the current secret, and the update
-- takes the latest committed one. A first configuration without a secret still
-- fails NOT NULL, which the route reports as 422 before it gets here.
INSERT INTO webhooks (tenant_id, url, secret, event_types, enabled, updated_at)
VALUES ($1, $2, coalesce($3, (SELECT w.secret FROM webhooks w WHERE w.tenant_id = $1)),
        $4, $5, $6)
ON CONFLICT (tenant_id) DO UPDATE
   SET url = EXCLUDED.url,
       secret = coalesce($3, webhooks.secret),
       event_types = EXCLUDED.event_types,
       enabled = EXCLUDED.enabled,
       version = webhooks.version + 1,
       updated_at = EXCLUDED.updated_at
RETURNING url, event_types, enabled, version, updated_at
