-- name: schedule --
-- $1 tenant_id, $2 kind, $3 dedupe_key, $4 payload, $5 run_at, $6 max_attempts
-- A live job with the same dedupe key is moved (new run_at, payload) instead of
-- doubled; a running one is left to finish and gets no second copy.
INSERT INTO jobs (tenant_id, kind, dedupe_key, payload, run_at, max_attempts)
VALUES ($1, $2, $3, $4, $5, $6)
ON CONFLICT (tenant_id, dedupe_key) WHERE dedupe_key IS NOT NULL AND status IN ('ready', 'running')
DO UPDATE SET run_at = EXCLUDED.run_at,
              payload = EXCLUDED.payload,
              updated_at = now()
        WHERE jobs.status = 'ready'
RETURNING id

-- name: cancel --
-- $1 tenant_id, $2 dedupe_key
DELETE FROM jobs
 WHERE tenant_id = $1 AND dedupe_key = $2 AND status = 'ready'

-- name: purge_expired_idempotency --
-- $1 tenant_id, $2 batch size
-- For the idempotency.purge job, run per tenant under that tenant's context.
DELETE FROM idempotency_keys
 WHERE ctid IN (SELECT ctid FROM idempotency_keys
                 WHERE tenant_id = $1 AND expires_at <= now()
                 LIMIT $2)
