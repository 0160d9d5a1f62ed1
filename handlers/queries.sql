-- name: list_agents --
-- $1 tenant_id, $2 after created_at (NULL = first page), $3 after id, $4 limit
SELECT id, email, name, role, active, version, created_at, updated_at
  FROM agents
 WHERE tenant_id = $1
   AND ($2::timestamptz IS NULL OR (created_at, id) > ($2::timestamptz, $3::uuid))
 ORDER BY created_at, id
 LIMIT $4

-- name: get_agent --
-- $1 tenant_id, $2 id
SELECT id, email, name, role, active, version, created_at, updated_at
  FROM agents
 WHERE tenant_id = $1 AND id = $2

-- name: get_agent_for_update --
-- $1 tenant_id, $2 id
SELECT id, email, name, role, active, version, created_at, updated_at
  FROM agents
 WHERE tenant_id = $1 AND id = $2
   FOR UPDATE

-- name: insert_agent --
-- $1 tenant_id, $2 id, $3 email, $4 name, $5 role, $6 now
INSERT INTO agents (tenant_id, id, email, name, role, created_at, updated_at)
VALUES ($1, $2, $3, $4, $5, $6, $6)
ON CONFLICT (tenant_id, email) DO NOTHING
RETURNING id, email, name, role, active, version, created_at, updated_at

-- name: update_agent --
-- $1 tenant_id, $2 id, $3 email, $4 name, $5 role, $6 active, $7 now
UPDATE agents
   SET email = $3, name = $4, role = $5, active = $6, version = version + 1, updated_at = $7
 WHERE tenant_id = $1 AND id = $2
RETURNING id, email, name, role, active, version, created_at, updated_at

-- name: agent_email_taken --
-- $1 tenant_id, $2 email, $3 except id
SELECT EXISTS (SELECT 1 FROM agents WHERE tenant_id = $1 AND email = $2 AND id <> $3)

-- name: list_api_keys --
-- $1 tenant_id, $2 after created_at (NULL = first page), $3 after id, $4 limit
SELECT id, name, role, prefix, agent_id, scopes, created_at, revoked_at
  FROM api_keys
 WHERE tenant_id = $1
   AND ($2::timestamptz IS NULL OR (created_at, id) > ($2::timestamptz, $3::uuid))
 ORDER BY created_at, id
 LIMIT $4

-- name: get_api_key_for_update --
-- $1 tenant_id, $2 id
-- A key's state, locked: two revocations of one key queue here, and the second sees
-- the first.
SELECT id, name, role, prefix, agent_id, scopes, created_at, revoked_at
  FROM api_keys
 WHERE tenant_id = $1 AND id = $2
   FOR UPDATE

-- name: revoke_api_key --
-- $1 tenant_id, $2 id, $3 now
UPDATE api_keys SET revoked_at = $3
 WHERE tenant_id = $1 AND id = $2
RETURNING id, name, role, prefix, agent_id, scopes, created_at, revoked_at

-- name: put_settings --
-- $1 tenant_id, $2 settings, $3 now
INSERT INTO tenant_settings (tenant_id, settings, version, updated_at)
VALUES ($1, $2, 1, $3)
ON CONFLICT (tenant_id) DO UPDATE
   SET settings = excluded.settings,
       version = tenant_settings.version + 1,
       updated_at = excluded.updated_at
RETURNING settings, version, updated_at

-- name: insert_api_key --
-- $1 tenant_id, $2 id, $3 name, $4 role, $5 prefix, $6 key_hash, $7 agent_id, $8 scopes
-- (NULL: unscoped)
INSERT INTO api_keys (tenant_id, id, name, role, prefix, key_hash, agent_id, scopes)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
RETURNING tenant_id, id, name, role, prefix, agent_id, scopes, created_at, revoked_at

-- name: insert_tenant --
-- $1 id, $2 name, $3 slug
INSERT INTO tenants (id, name, slug) VALUES ($1, $2, $3)

-- name: slug_taken --
-- $1 slug (as the owner, who reads every tenant: migration 0551)
SELECT EXISTS (SELECT 1 FROM tenants WHERE slug = $1)

-- name: set_tenant_slug --
-- $1 tenant_id, $2 slug; the previous one, or no row for an unknown tenant
UPDATE tenants t SET slug = $2 FROM tenants old
 WHERE t.id = $1 AND old.id = t.id
RETURNING old.slug

-- name: tenant_by_slug --
-- $1 slug or anything typed in its place (before the tenant is known: migration 0551)
SELECT tenant_by_slug($1)

-- name: insert_tenant_head --
-- $1 tenant_id
INSERT INTO tenant_heads (tenant_id) VALUES ($1)

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

-- name: arm_worker --
-- (no arguments) cross-tenant reading of tenants, this transaction only
SELECT set_config('app.worker', 'on', true)

-- name: all_tenant_ids --
-- (no arguments) worker-armed
SELECT id FROM tenants ORDER BY id

-- name: login --
-- $1 tenant_id, $2 email
-- The agent an e-mail signs in as, with its password hash (NULL: no login yet); the
-- columns of handlers.sessions.SessionKind.
SELECT a.id, a.role, a.active, l.password_hash
  FROM agents a
  LEFT JOIN agent_logins l ON l.tenant_id = a.tenant_id AND l.agent_id = a.id
 WHERE a.tenant_id = $1 AND a.email = $2

-- name: set_password --
-- $1 tenant_id, $2 agent_id, $3 password_hash, $4 now
INSERT INTO agent_logins (tenant_id, agent_id, password_hash, set_at, updated_at)
VALUES ($1, $2, $3, $4, $4)
ON CONFLICT (tenant_id, agent_id) DO UPDATE
   SET password_hash = EXCLUDED.password_hash, set_at = EXCLUDED.set_at,
       updated_at = EXCLUDED.updated_at

-- name: rehash_password --
-- $1 tenant_id, $2 agent_id, $3 new hash, $4 the hash that was checked, $5 now
-- Compare-and-set: a password changed meanwhile is not overwritten by the old one.
UPDATE agent_logins SET password_hash = $3, updated_at = $5
 WHERE tenant_id = $1 AND agent_id = $2 AND password_hash = $4

-- name: insert_session --
-- $1 tenant_id, $2 id, $3 agent_id, $4 now, $5 expires_at (the absolute cap)
INSERT INTO agent_sessions (tenant_id, id, agent_id, created_at, last_used_at, expires_at)
VALUES ($1, $2, $3, $4, $4, $5)

-- name: insert_refresh_token --
-- $1 tenant_id, $2 token_hash, $3 session_id, $4 now, $5 expires_at
INSERT INTO refresh_tokens (tenant_id, token_hash, session_id, issued_at, expires_at)
VALUES ($1, $2, $3, $4, $5)

-- name: get_refresh_token --
-- $1 tenant_id, $2 token_hash
-- A staff session's token (a portal session's is handlers/portal.sql's); the columns
-- of handlers.sessions.SessionKind.
SELECT t.session_id, t.expires_at, t.rotated_at, s.agent_id AS holder_id,
       s.expires_at AS session_expires_at, s.revoked_at, a.role, a.active
  FROM refresh_tokens t
  JOIN agent_sessions s ON s.tenant_id = t.tenant_id AND s.id = t.session_id
  JOIN agents a ON a.tenant_id = s.tenant_id AND a.id = s.agent_id
 WHERE t.tenant_id = $1 AND t.token_hash = $2

-- name: rotate_refresh_token --
-- $1 tenant_id, $2 token_hash, $3 now
-- Exactly one of two concurrent refreshes with the same token gets the row; the other
-- sees a rotated token, which is a replay. Staff and portal tokens alike.
UPDATE refresh_tokens SET rotated_at = $3
 WHERE tenant_id = $1 AND token_hash = $2 AND rotated_at IS NULL
RETURNING rotated_at

-- name: touch_session --
-- $1 tenant_id, $2 id, $3 now
UPDATE agent_sessions SET last_used_at = $3
 WHERE tenant_id = $1 AND id = $2 AND revoked_at IS NULL

-- name: revoke_session --
-- $1 tenant_id, $2 id, $3 now, $4 reason
-- Revoking twice keeps the first instant and reason: the second returns no row.
UPDATE agent_sessions SET revoked_at = $3, revoked_reason = $4
 WHERE tenant_id = $1 AND id = $2 AND revoked_at IS NULL
RETURNING agent_id

-- name: insert_invitation --
-- $1 tenant_id, $2 id, $3 email, $4 name, $5 role, $6 token_hash, $7 now, $8 expires_at
INSERT INTO agent_invitations (tenant_id, id, email, name, role, token_hash, created_at,
                               expires_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
RETURNING id, email, name, role, created_at, expires_at

-- name: get_invitation --
-- $1 tenant_id, $2 token_hash
SELECT id, email, name, role, expires_at, accepted_at
  FROM agent_invitations
 WHERE tenant_id = $1 AND token_hash = $2

-- name: get_invitation_for_update --
-- $1 tenant_id, $2 token_hash
SELECT id, email, name, role, expires_at, accepted_at
  FROM agent_invitations
 WHERE tenant_id = $1 AND token_hash = $2
   FOR UPDATE

-- name: spend_invitation --
-- $1 tenant_id, $2 id, $3 now, $4 agent_id
UPDATE agent_invitations SET accepted_at = $3, agent_id = $4
 WHERE tenant_id = $1 AND id = $2 AND accepted_at IS NULL

-- name: agent_by_email --
-- $1 tenant_id, $2 email
SELECT id, active FROM agents WHERE tenant_id = $1 AND email = $2

-- name: tenant_name --
-- $1 tenant_id (row-level security: the tenant's own row only)
SELECT name FROM tenants WHERE id = $1
