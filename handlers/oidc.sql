-- name: provider_get --
-- $1 tenant_id
SELECT id, label, issuer, client_id, client_secret, kek, allowed_domain, create_agents,
       version, created_at, updated_at
  FROM oidc_providers WHERE tenant_id = $1

-- name: provider_upsert --
-- $1 tenant_id, $2 id (kept when the tenant has one), $3 label, $4 issuer, $5 client_id,
-- $6 client_secret (sealed), $7 kek, $8 allowed_domain, $9 create_agents, $10 now
INSERT INTO oidc_providers AS p (tenant_id, id, label, issuer, client_id, client_secret,
                                 kek, allowed_domain, create_agents, version, created_at,
                                 updated_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, 1, $10, $10)
ON CONFLICT (tenant_id) DO UPDATE
   SET label = $3, issuer = $4, client_id = $5, client_secret = $6, kek = $7,
       allowed_domain = $8, create_agents = $9, version = p.version + 1, updated_at = $10
RETURNING id, label, issuer, client_id, allowed_domain, create_agents, version, created_at,
          updated_at

-- name: provider_delete --
-- $1 tenant_id
DELETE FROM oidc_providers WHERE tenant_id = $1
RETURNING id, label, issuer, client_id, allowed_domain, create_agents, version, created_at,
          updated_at

-- name: attempt_insert --
-- $1 tenant_id, $2 state_hash, $3 nonce_hash, $4 code_verifier, $5 redirect_uri, $6 now,
-- $7 expires_at
INSERT INTO oidc_attempts (tenant_id, state_hash, nonce_hash, code_verifier, redirect_uri,
                           created_at, expires_at)
VALUES ($1, $2, $3, $4, $5, $6, $7)

-- name: attempts_sweep --
-- $1 tenant_id, $2 now: the tenant's attempts that can no longer be spent
DELETE FROM oidc_attempts WHERE tenant_id = $1 AND expires_at < $2

-- name: attempt_spend --
-- $1 tenant_id, $2 state_hash, $3 now: the attempt, once, while it has not expired
UPDATE oidc_attempts SET used_at = $3
 WHERE tenant_id = $1 AND state_hash = $2 AND used_at IS NULL AND expires_at > $3
RETURNING nonce_hash, code_verifier, redirect_uri

-- name: agent_for_email --
-- $1 tenant_id, $2 email: the agent of an e-mail in any case, the exact spelling first
SELECT id, role, active FROM agents
 WHERE tenant_id = $1 AND lower(email) = lower($2)
 ORDER BY (email = $2) DESC, created_at
 LIMIT 1
