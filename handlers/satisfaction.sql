-- name: insert_link --
-- $1 tenant_id, $2 id, $3 ticket_id, $4 contact_id, $5 token sha256, $6 created_at,
-- $7 expires_at
INSERT INTO satisfaction_links (tenant_id, id, ticket_id, contact_id, token_hash,
                                created_at, expires_at)
VALUES ($1, $2, $3, $4, $5, $6, $7)
RETURNING id, ticket_id, created_at, expires_at

-- name: find_link --
-- $1 tenant_id, $2 token sha256
SELECT ticket_id, contact_id, expires_at, spent_at
  FROM satisfaction_links WHERE tenant_id = $1 AND token_hash = $2

-- name: get_link --
-- $1 tenant_id, $2 token sha256; FOR UPDATE: two people spending one link race here.
SELECT id, ticket_id, contact_id, expires_at, spent_at
  FROM satisfaction_links WHERE tenant_id = $1 AND token_hash = $2
   FOR UPDATE

-- name: spend_link --
-- $1 tenant_id, $2 id, $3 at
UPDATE satisfaction_links SET spent_at = $3 WHERE tenant_id = $1 AND id = $2

-- name: ticket_to_rate --
-- $1 tenant_id, $2 ticket id
SELECT state, contact_id FROM tickets WHERE tenant_id = $1 AND id = $2
