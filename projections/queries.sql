-- name: tenant_settings --
-- $1 tenant_id
SELECT settings FROM tenant_settings WHERE tenant_id = $1

-- name: ticket_state --
-- $1 tenant_id, $2 ticket_id
SELECT version, state_json FROM tickets WHERE tenant_id = $1 AND id = $2

-- name: ticket_state_for_update --
-- $1 tenant_id, $2 ticket_id
-- Commands on one ticket queue here, so each decides on the state the previous one
-- committed instead of losing a race at append time.
SELECT version, state_json FROM tickets WHERE tenant_id = $1 AND id = $2 FOR UPDATE

-- name: insert_ticket --
-- $1 tenant_id, $2 id, $3 version, $4 state, $5 priority, $6 source, $7 assignee,
-- $8 tags, $9 subject, $10 requester, $11 follow_up_of, $12 clocks, $13 state_json,
-- $14 created_at, $15 updated_at
INSERT INTO tickets (tenant_id, id, version, state, priority, source, assignee, tags, subject,
                     requester, follow_up_of, clocks, state_json, created_at, updated_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)

-- name: update_ticket --
-- $1 tenant_id, $2 id, $3 version, $4 state, $5 priority, $6 assignee, $7 tags,
-- $8 clocks, $9 state_json, $10 updated_at, $11 previous version
UPDATE tickets
   SET version = $3, state = $4, priority = $5, assignee = $6, tags = $7, clocks = $8,
       state_json = $9, updated_at = $10
 WHERE tenant_id = $1 AND id = $2 AND version = $11

-- name: insert_message --
-- $1 tenant_id, $2 id, $3 ticket_id, $4 version, $5 visibility, $6 author_kind,
-- $7 author_id, $8 body, $9 created_at
INSERT INTO messages (tenant_id, id, ticket_id, version, visibility, author_kind, author_id,
                      body, created_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)

-- name: active_agent --
-- $1 tenant_id, $2 agent_id
SELECT EXISTS (SELECT 1 FROM agents WHERE tenant_id = $1 AND id = $2 AND active)

-- name: list_tickets --
-- $1 tenant_id, $2 states text[], $3 priorities text[], $4 sources text[],
-- $5 assignee uuid, $6 unassigned only, $7 tag, $8 created_after, $9 created_before,
-- $10 cursor created_at, $11 cursor id, $12 limit
-- Newest first. The first page passes ('infinity', max uuid) as its cursor, so the
-- keyset condition is always present and the index is walked from the cursor on, at
-- any depth. Filters that are NULL are off.
SELECT state_json
  FROM tickets
 WHERE tenant_id = $1
   AND (created_at, id) < ($10::timestamptz, $11::uuid)
   AND ($2::text[] IS NULL OR state = ANY ($2))
   AND ($3::text[] IS NULL OR priority = ANY ($3))
   AND ($4::text[] IS NULL OR source = ANY ($4))
   AND ($5::uuid IS NULL OR assignee = $5)
   AND (NOT $6::boolean OR assignee IS NULL)
   AND ($7::text IS NULL OR tags @> ARRAY[$7::text])
   AND ($8::timestamptz IS NULL OR created_at >= $8)
   AND ($9::timestamptz IS NULL OR created_at < $9)
 ORDER BY created_at DESC, id DESC
 LIMIT $12

-- name: list_messages --
-- $1 tenant_id, $2 ticket_id, $3 cursor created_at, $4 cursor id, $5 limit
-- Oldest first; the first page passes ('-infinity', nil uuid).
SELECT id, ticket_id, version, visibility, author_kind, author_id, body, created_at
  FROM messages
 WHERE tenant_id = $1 AND ticket_id = $2
   AND (created_at, id) > ($3::timestamptz, $4::uuid)
 ORDER BY created_at, id
 LIMIT $5
