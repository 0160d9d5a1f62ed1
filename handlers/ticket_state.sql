-- The write side's store of ticket state (handlers/ticket_state.py): the `tickets` row a
-- command locks and decides on, read with what the decision needs beside it.

-- name: ticket_state --
-- $1 tenant_id, $2 ticket_id
SELECT version, state_json FROM tickets WHERE tenant_id = $1 AND id = $2

-- name: ticket_state_for_update --
-- $1 tenant_id, $2 ticket_id
-- Commands on one ticket queue here, so each decides on the state the previous one
-- committed instead of losing a race at append time.
-- Finding it marks it as this transaction's (app.loaded_tickets, migration 0600): its
-- write may then move it out of the agent's group scope.
SELECT version, state_json, ticket_loaded(id) FROM tickets
 WHERE tenant_id = $1 AND id = $2 FOR UPDATE

-- name: command_state --
-- $1 tenant_id, $2 ticket_id, $3 whether to read the field definitions, $4 a new
-- ticket's requester e-mail (NULL: none), $5 the revision of the tenant's SLA policies
-- the process holds them parsed at (NULL: none)
-- What a ticket command decides on, in one round trip: the ticket's state, locked as
-- ticket_state_for_update locks it; the data key of its requester contact, held as
-- data_key_hold holds it (after the ticket, the order an erasure takes them in); the
-- tenant's settings (null: the defaults); the revision of its SLA policies (0: none
-- written since migration 0680) and, unless that is $5, the policies (null: none) and
-- their calendars as they are now, read in the same snapshot as it; when asked, every field definition (as
-- ticket_field_catalog orders them); and with an e-mail, its requester lock taken as
-- lock_requester takes it (its contact is read by the next statement, which sees a
-- merge that held the lock). A ticket found is marked as ticket_state_for_update marks it.
SELECT t.state_json, t.contact_id, k.subject_id IS NOT NULL AS has_key, k.wrapped, k.kek,
       CASE WHEN t.state_json IS NOT NULL THEN ticket_loaded($2) END AS loaded,
       s.settings,
       CASE WHEN $3 THEN (SELECT coalesce(json_agg(f.definition ORDER BY f.key), '[]')
                            FROM ticket_fields f WHERE f.tenant_id = $1) END AS catalog,
       CASE WHEN $4::text IS NOT NULL THEN pg_advisory_xact_lock_shared(
           hashtextextended($1::uuid::text || '/' || lower($4::text), 0)) END AS locked,
       coalesce(r.revision, 0) AS policy_revision,
       CASE WHEN coalesce(r.revision, 0) IS DISTINCT FROM $5::bigint THEN
       (SELECT json_agg(json_build_object(
                   'id', p.id, 'version', p.version, 'name', p.name, 'position', p.position,
                   'default', p."default", 'conditions', p.conditions, 'targets', p.targets,
                   'calendar_id', p.calendar_id, 'created_at', p.created_at,
                   'updated_at', p.updated_at))
          FROM sla_policies p WHERE p.tenant_id = $1) END AS policies,
       CASE WHEN coalesce(r.revision, 0) IS DISTINCT FROM $5::bigint THEN
       (SELECT json_agg(json_build_object('id', c.id, 'version', c.version, 'hours', c.hours))
          FROM sla_calendars c
         WHERE c.tenant_id = $1
           AND c.id IN (SELECT calendar_id FROM sla_policies WHERE tenant_id = $1)) END
         AS calendars
  FROM (SELECT 1) AS one
  LEFT JOIN LATERAL (SELECT state_json, contact_id FROM tickets
                      WHERE tenant_id = $1 AND id = $2 FOR UPDATE) t ON true
  LEFT JOIN LATERAL (SELECT subject_id, wrapped, kek FROM data_keys
                      WHERE tenant_id = $1 AND subject_id = t.contact_id FOR SHARE) k ON true
  LEFT JOIN tenant_settings s ON s.tenant_id = $1
  LEFT JOIN sla_policy_revisions r ON r.tenant_id = $1

-- name: open_ticket_ids --
-- $1 tenant_id: every ticket not closed, oldest first (tickets_state)
SELECT id FROM tickets WHERE tenant_id = $1 AND state <> 'closed' ORDER BY created_at, id

-- name: thread_message_ids --
-- $1 tenant_id, $2 ticket ids (a ticket and the tickets merged into it): the messages
-- of its thread, oldest first, as GET /v1/tickets/{id}/messages lists them
SELECT id FROM messages
 WHERE tenant_id = $1 AND ticket_id = ANY($2::uuid[])
 ORDER BY created_at, id

-- name: own_messages --
-- $1 tenant_id, $2 ticket_id: the messages written on the ticket (not those of tickets
-- merged into it), oldest first, as a split decides on them under the ticket's lock
SELECT id, visibility, author_kind, created_at FROM messages
 WHERE tenant_id = $1 AND ticket_id = $2
 ORDER BY created_at, id

-- name: lock_duplicate_links --
-- $1 tenant_id: one writer of a tenant's duplicate links at a time, to commit
SELECT pg_advisory_xact_lock(hashtextextended($1::uuid::text || '/duplicate-links', 0))
