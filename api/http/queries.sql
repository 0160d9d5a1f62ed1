-- name: api_key_lookup --
-- $1 key_hash
SELECT tenant_id, key_id, role, agent_id, agent_active, scopes FROM api_key_lookup($1)

-- name: session_principal --
-- $1 tenant_id, $2 session id, $3 agent id
-- An access token's session and its agent, read under the token's tenant.
SELECT s.revoked_at, s.expires_at, a.role, a.active
  FROM agent_sessions s
  JOIN agents a ON a.tenant_id = s.tenant_id AND a.id = s.agent_id
 WHERE s.tenant_id = $1 AND s.id = $2 AND s.agent_id = $3

-- name: idempotency_try_lock --
-- $1 tenant_id, $2 api_key_id, $3 route, $4 key
-- NOWAIT semantics: a second request with the same key while the first is still in
-- its transaction gets false at once (409) instead of queueing behind it.
SELECT pg_try_advisory_xact_lock(
    hashtextextended('idem/' || $1::uuid::text || '/' || $2::uuid::text || '/' || $3::text
                     || '/' || $4::text, 0))

-- name: idempotency_get --
-- $1 tenant_id, $2 api_key_id, $3 route, $4 key
SELECT fingerprint, response_status, response_bytes, response_sealed, refusal,
       response_body, response_headers
  FROM idempotency_keys
 WHERE tenant_id = $1 AND api_key_id = $2 AND route = $3 AND key = $4
   AND expires_at > now()

-- name: idempotency_put --
-- $1 tenant_id, $2 api_key_id, $3 route, $4 key, $5 fingerprint, $6 status,
-- $7 answer bytes (sealed when $8), $8 sealed, $9 refusal (sealed answers), $10 headers,
-- $11 ttl seconds
-- An expired record with the same key is replaced: expired records are ignored.
INSERT INTO idempotency_keys (tenant_id, api_key_id, route, key, fingerprint,
                              response_status, response_bytes, response_sealed, refusal,
                              response_headers, expires_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, now() + make_interval(secs => $11))
ON CONFLICT (tenant_id, api_key_id, route, key) DO UPDATE
   SET fingerprint = EXCLUDED.fingerprint, response_status = EXCLUDED.response_status,
       response_bytes = EXCLUDED.response_bytes,
       response_sealed = EXCLUDED.response_sealed, refusal = EXCLUDED.refusal,
       response_body = NULL, response_headers = EXCLUDED.response_headers,
       created_at = now(), expires_at = EXCLUDED.expires_at
