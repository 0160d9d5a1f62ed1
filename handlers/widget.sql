-- name: insert_session --
-- $1 tenant_id, $2 id, $3 email, $4 origin, $5 created_at, $6 expires_at
INSERT INTO widget_sessions (tenant_id, id, email, origin, created_at, expires_at)
VALUES ($1, $2, $3, $4, $5, $6)

-- name: open_session --
-- $1 tenant_id, $2 session id, $3 now
-- The origin of a widget session that may still act (none: unknown, expired, revoked).
SELECT origin FROM widget_sessions
 WHERE tenant_id = $1 AND id = $2 AND revoked_at IS NULL AND expires_at > $3

-- name: session_email --
-- $1 tenant_id, $2 session id
SELECT email FROM widget_sessions WHERE tenant_id = $1 AND id = $2

-- name: hold_ticket --
-- $1 tenant_id, $2 session id, $3 ticket id, $4 at
-- Written before the ticket's own row (its scope lets the row in) or, for a
-- follow-up, after it.
INSERT INTO widget_tickets (tenant_id, session_id, ticket_id, created_at)
VALUES ($1, $2, $3, $4)
ON CONFLICT DO NOTHING

-- name: held_ticket --
-- $1 tenant_id, $2 session id, $3 ticket id
-- A ticket the session opened, or a follow-up of one. The scope is written out
-- although row-level security applies it too (migration 0470). With its field values
-- and its satisfaction rating (null: not rated), which the visitor sees as the
-- portal's customer does, and the tickets merged into it (their public messages are
-- in its thread).
SELECT t.id, t.subject, t.state, t.created_at, t.updated_at, t.contact_id, t.fields,
       t.state_json->'satisfaction' AS satisfaction,
       ARRAY(SELECT jsonb_array_elements_text(coalesce(t.state_json->'merged_from', '[]'))
             )::uuid[] AS merged_from
  FROM tickets t
 WHERE t.tenant_id = $1 AND t.id = $3
   AND EXISTS (SELECT 1 FROM widget_tickets w
                WHERE w.tenant_id = t.tenant_id AND w.session_id = $2
                  AND w.ticket_id IN (t.id, t.follow_up_of))

-- name: forget_contact --
-- $1 tenant_id, $2 the contact's e-mail, $3 the contact's ticket ids, $4 at
-- An erased contact's widget sessions: those typed with its e-mail and those that
-- opened its tickets lose the e-mail and end.
UPDATE widget_sessions s SET email = '', revoked_at = coalesce(s.revoked_at, $4)
 WHERE s.tenant_id = $1
   AND (lower(s.email) = lower($2)
        OR EXISTS (SELECT 1 FROM widget_tickets w
                    WHERE w.tenant_id = s.tenant_id AND w.session_id = s.id
                      AND w.ticket_id = ANY ($3::uuid[])))
