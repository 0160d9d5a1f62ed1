-- name: login --
-- $1 tenant_id, $2 e-mail (any case)
-- The contact an e-mail signs in to the portal as, with its password hash (NULL: no
-- password yet), in the columns of handlers.sessions.SessionKind. A merged contact
-- has no login of its own (it is not active): its survivor does.
SELECT c.id, 'customer' AS role, c.merged_into IS NULL AS active, l.password_hash
  FROM contacts c
  LEFT JOIN contact_logins l ON l.tenant_id = c.tenant_id AND l.contact_id = c.id
 WHERE c.tenant_id = $1 AND c.email_key = lower($2)

-- name: rehash_password --
-- $1 tenant_id, $2 contact_id, $3 new hash, $4 the hash it replaces, $5 at
-- Only if the hash is still the one checked: a password set meanwhile wins.
UPDATE contact_logins SET password_hash = $3, updated_at = $5
 WHERE tenant_id = $1 AND contact_id = $2 AND password_hash = $4

-- name: set_password --
-- $1 tenant_id, $2 contact_id, $3 password hash, $4 at
INSERT INTO contact_logins (tenant_id, contact_id, password_hash, set_at, updated_at)
VALUES ($1, $2, $3, $4, $4)
ON CONFLICT (tenant_id, contact_id)
DO UPDATE SET password_hash = EXCLUDED.password_hash, updated_at = EXCLUDED.updated_at

-- name: insert_link --
-- $1 tenant_id, $2 id, $3 contact_id, $4 token sha256, $5 created_at, $6 expires_at
INSERT INTO contact_password_links (tenant_id, id, contact_id, token_hash, created_at,
                                    expires_at)
VALUES ($1, $2, $3, $4, $5, $6)
RETURNING id, contact_id, created_at, expires_at

-- name: find_link --
-- $1 tenant_id, $2 token sha256
SELECT contact_id, expires_at, spent_at
  FROM contact_password_links WHERE tenant_id = $1 AND token_hash = $2

-- name: get_link --
-- $1 tenant_id, $2 token sha256; FOR UPDATE: two people spending one link race here.
SELECT l.id, l.contact_id, l.expires_at, l.spent_at, c.email
  FROM contact_password_links l
  JOIN contacts c ON c.tenant_id = l.tenant_id AND c.id = l.contact_id
 WHERE l.tenant_id = $1 AND l.token_hash = $2
   FOR UPDATE OF l

-- name: spend_link --
-- $1 tenant_id, $2 id, $3 at
UPDATE contact_password_links SET spent_at = $3 WHERE tenant_id = $1 AND id = $2

-- name: insert_session --
-- $1 tenant_id, $2 id, $3 contact_id, $4 created_at, $5 expires_at (the absolute cap)
INSERT INTO contact_sessions (tenant_id, id, contact_id, created_at, last_used_at, expires_at)
VALUES ($1, $2, $3, $4, $4, $5)

-- name: insert_refresh_token --
-- $1 tenant_id, $2 token_hash, $3 contact session id, $4 now, $5 expires_at
INSERT INTO refresh_tokens (tenant_id, token_hash, contact_session_id, issued_at,
                            expires_at)
VALUES ($1, $2, $3, $4, $5)

-- name: get_refresh_token --
-- $1 tenant_id, $2 token_hash
-- A portal session's token, in the columns of handlers.sessions.SessionKind (a staff
-- token has no contact session and is not found here). A merged contact is inactive.
SELECT t.contact_session_id AS session_id, t.expires_at, t.rotated_at,
       s.contact_id AS holder_id, s.expires_at AS session_expires_at, s.revoked_at,
       'customer' AS role, c.merged_into IS NULL AS active
  FROM refresh_tokens t
  JOIN contact_sessions s ON s.tenant_id = t.tenant_id AND s.id = t.contact_session_id
  JOIN contacts c ON c.tenant_id = s.tenant_id AND c.id = s.contact_id
 WHERE t.tenant_id = $1 AND t.token_hash = $2

-- name: touch_session --
-- $1 tenant_id, $2 id, $3 now
UPDATE contact_sessions SET last_used_at = $3
 WHERE tenant_id = $1 AND id = $2 AND revoked_at IS NULL

-- name: session_open --
-- $1 tenant_id, $2 session id, $3 contact_id, $4 now
-- Whether a portal access token's session still lets it act.
SELECT EXISTS (SELECT 1 FROM contact_sessions
                WHERE tenant_id = $1 AND id = $2 AND contact_id = $3
                  AND revoked_at IS NULL AND expires_at > $4)

-- name: revoke_session --
-- $1 tenant_id, $2 session id, $3 at, $4 reason
-- Revoking twice keeps the first instant and reason: the second returns no row.
UPDATE contact_sessions SET revoked_at = $3, revoked_reason = $4
 WHERE tenant_id = $1 AND id = $2 AND revoked_at IS NULL
RETURNING contact_id

-- name: revoke_contact_sessions --
-- $1 tenant_id, $2 contact_id, $3 at, $4 reason
-- Every open session of a contact (their refresh tokens die with them).
UPDATE contact_sessions SET revoked_at = $3, revoked_reason = $4
 WHERE tenant_id = $1 AND contact_id = $2 AND revoked_at IS NULL
RETURNING id

-- name: own_tickets --
-- $1 tenant_id, $2 contact_id, $3 after created_at (NULL: first page), $4 after id,
-- $5 limit
-- Newest first: the tickets the contact is the requester of, and those it is copied on.
-- The contact filters are written out although row-level security applies them too:
-- the index (tenant_id, contact_id, created_at, id) walks the first branch in order, and
-- ticket_contacts_contact (migration 0900) finds the second's few tickets.
SELECT id, subject, state, created_at, updated_at FROM (
    (SELECT id, subject, state, created_at, updated_at
       FROM tickets
      WHERE tenant_id = $1 AND contact_id = $2
        AND ($3::timestamptz IS NULL OR (created_at, id) < ($3, $4))
      ORDER BY created_at DESC, id DESC
      LIMIT $5)
    UNION ALL
    (SELECT t.id, t.subject, t.state, t.created_at, t.updated_at
       FROM ticket_contacts c
       JOIN tickets t ON t.tenant_id = c.tenant_id AND t.id = c.ticket_id
      WHERE c.tenant_id = $1 AND c.contact_id = $2 AND c.role = 'cc'
        AND t.contact_id IS DISTINCT FROM $2
        AND ($3::timestamptz IS NULL OR (t.created_at, t.id) < ($3, $4))
      ORDER BY t.created_at DESC, t.id DESC
      LIMIT $5)) AS read
 ORDER BY created_at DESC, id DESC
 LIMIT $5

-- name: own_ticket --
-- $1 tenant_id, $2 contact_id, $3 ticket id; with the customers it copies (null: none),
-- its satisfaction rating (null: not rated), the tickets merged into it (their public
-- messages are in its thread) and whether the contact is its requester (``own``) or
-- only copied on it (a CC reads it and its public messages, and does no more)
SELECT id, subject, state, created_at, updated_at, fields, state_json->'ccs' AS ccs,
       state_json->'satisfaction' AS satisfaction,
       ARRAY(SELECT jsonb_array_elements_text(coalesce(state_json->'merged_from', '[]'))
             )::uuid[] AS merged_from,
       contact_id IS NOT DISTINCT FROM $2 AS own
  FROM tickets t
 WHERE tenant_id = $1 AND id = $3
   AND (contact_id = $2
        OR EXISTS (SELECT 1 FROM ticket_contacts c
                    WHERE c.tenant_id = $1 AND c.contact_id = $2 AND c.ticket_id = t.id
                      AND c.role = 'cc'))

-- name: public_messages --
-- $1 tenant_id, $2 ticket id, $3 after created_at (NULL: first page), $4 after id,
-- $5 limit
-- Oldest first; internal notes are never read (and row-level security hides them).
SELECT id, ticket_id, author_kind, body, created_at, attachments
  FROM messages
 WHERE tenant_id = $1 AND ticket_id = $2 AND visibility = 'public'
   AND ($3::timestamptz IS NULL OR (created_at, id) > ($3, $4))
 ORDER BY created_at, id
 LIMIT $5

-- name: public_thread_messages --
-- $1 tenant_id, $2 ticket ids (a ticket and those merged into it), $3 after created_at
-- (NULL: first page), $4 after id, $5 limit
-- public_messages of a merged thread, each message as written on its own ticket: the
-- reader of the target reads those of the tickets merged into it (migration 0900, role
-- 'merged'; a widget session holds them, projections/queries.sql hold_merged).
SELECT id, ticket_id, author_kind, body, created_at, attachments
  FROM messages
 WHERE tenant_id = $1 AND ticket_id = ANY ($2::uuid[]) AND visibility = 'public'
   AND ($3::timestamptz IS NULL OR (created_at, id) > ($3, $4))
 ORDER BY created_at, id
 LIMIT $5
