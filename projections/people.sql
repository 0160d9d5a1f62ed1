-- Statements of the contact and organization read models (projections/people.py).

-- name: contact --
-- $1 tenant_id, $2 contact id
SELECT id, version, email, name, phone, external_id, organization_id, tags, merged_into,
       created_at, updated_at
  FROM contacts WHERE tenant_id = $1 AND id = $2

-- name: contact_for_update --
-- $1 tenant_id, $2 contact id
SELECT id, version, email, name, phone, external_id, organization_id, tags, merged_into,
       created_at, updated_at
  FROM contacts WHERE tenant_id = $1 AND id = $2 FOR UPDATE

-- name: contacts_for_update --
-- $1 tenant_id, $2 contact ids
-- In id order: two merges that cross each other lock their rows in the same order.
SELECT id, version, email, name, phone, external_id, organization_id, tags, merged_into,
       created_at, updated_at
  FROM contacts WHERE tenant_id = $1 AND id = ANY ($2::uuid[])
 ORDER BY id FOR UPDATE

-- name: contact_by_email --
-- $1 tenant_id, $2 e-mail (any case)
SELECT id, version, email, name, phone, external_id, organization_id, tags, merged_into,
       created_at, updated_at
  FROM contacts WHERE tenant_id = $1 AND email_key = lower($2)

-- name: contact_by_external_id --
-- $1 tenant_id, $2 external id
SELECT id FROM contacts WHERE tenant_id = $1 AND external_id = $2

-- name: insert_contact --
-- $1 tenant_id, $2 id, $3 version, $4 email, $5 name, $6 phone, $7 external_id,
-- $8 organization_id, $9 tags, $10 created_at, $11 updated_at
-- DO NOTHING on a taken e-mail or external id: under READ COMMITTED the insert waits
-- for a concurrent one with the same key and then finds its row taken, so the caller
-- reads the winner's row instead of failing (one contact per e-mail, however many
-- tickets race to create it).
INSERT INTO contacts (tenant_id, id, version, email, name, phone, external_id,
                      organization_id, tags, created_at, updated_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)
ON CONFLICT DO NOTHING
RETURNING id

-- name: update_contact --
-- $1 tenant_id, $2 id, $3 version, $4 email, $5 name, $6 phone, $7 external_id,
-- $8 organization_id, $9 tags, $10 merged_into, $11 updated_at, $12 previous version
UPDATE contacts
   SET version = $3, email = $4, name = $5, phone = $6, external_id = $7,
       organization_id = $8, tags = $9, merged_into = $10, updated_at = $11
 WHERE tenant_id = $1 AND id = $2 AND version = $12

-- name: move_contact_tickets --
-- $1 tenant_id, $2 contact id, $3 organization id (or null)
-- A ticket's organization is its contact's: the list filter reads this column.
UPDATE tickets SET organization_id = $3
 WHERE tenant_id = $1 AND contact_id = $2 AND organization_id IS DISTINCT FROM $3

-- name: list_contacts --
-- $1 tenant_id, $2 cursor created_at, $3 cursor id, $4 limit, $5 e-mail (null: any),
-- $6 organization id (null: any), $7 without an organization, $8 tag (null: any)
-- Newest first, merged contacts left out. The first page passes ('infinity', max uuid).
SELECT id, version, email, name, phone, external_id, organization_id, tags, merged_into,
       created_at, updated_at
  FROM contacts
 WHERE tenant_id = $1
   AND (created_at, id) < ($2::timestamptz, $3::uuid)
   AND merged_into IS NULL
   AND ($5::text IS NULL OR email_key = lower($5::text))
   AND ($6::uuid IS NULL OR organization_id = $6::uuid)
   AND (NOT $7::boolean OR organization_id IS NULL)
   AND ($8::text IS NULL OR tags @> ARRAY[$8::text])
 ORDER BY created_at DESC, id DESC
 LIMIT $4

-- name: contacts_of_domains --
-- $1 tenant_id, $2 domains, $3 organization id
-- Contacts that a change of domains would move into the organization.
SELECT id, version, email, name, phone, external_id, organization_id, tags, merged_into,
       created_at, updated_at
  FROM contacts
 WHERE tenant_id = $1 AND email_domain = ANY ($2::text[]) AND merged_into IS NULL
   AND organization_id IS DISTINCT FROM $3
 ORDER BY id FOR UPDATE

-- name: contacts_leaving --
-- $1 tenant_id, $2 organization id, $3 domains it gave up
SELECT id, version, email, name, phone, external_id, organization_id, tags, merged_into,
       created_at, updated_at
  FROM contacts
 WHERE tenant_id = $1 AND organization_id = $2 AND email_domain = ANY ($3::text[])
   AND merged_into IS NULL
 ORDER BY id FOR UPDATE

-- name: contact_ticket_ids --
-- $1 tenant_id, $2 contact id
SELECT id FROM tickets WHERE tenant_id = $1 AND contact_id = $2 ORDER BY created_at, id

-- name: contact_cc_ticket_ids --
-- $1 tenant_id, $2 contact id: the tickets copying the contact (ticket_contacts, 0900)
SELECT ticket_id AS id FROM ticket_contacts
 WHERE tenant_id = $1 AND contact_id = $2 AND role = 'cc' ORDER BY ticket_id

-- name: organization --
-- $1 tenant_id, $2 organization id
SELECT id, version, name, domains, created_at, updated_at
  FROM organizations WHERE tenant_id = $1 AND id = $2

-- name: organization_for_update --
-- $1 tenant_id, $2 organization id
SELECT id, version, name, domains, created_at, updated_at
  FROM organizations WHERE tenant_id = $1 AND id = $2 FOR UPDATE

-- name: organization_of_domain --
-- $1 tenant_id, $2 domain (lower case)
SELECT organization_id FROM organization_domains WHERE tenant_id = $1 AND domain = $2

-- name: domain_holders --
-- $1 tenant_id, $2 domains, $3 organization id that may hold them
SELECT domain, organization_id FROM organization_domains
 WHERE tenant_id = $1 AND domain = ANY ($2::text[]) AND organization_id <> $3
 ORDER BY domain

-- name: organization_by_name --
-- $1 tenant_id, $2 name (any case)
SELECT id FROM organizations WHERE tenant_id = $1 AND name_key = lower($2)

-- name: insert_organization --
-- $1 tenant_id, $2 id, $3 version, $4 name, $5 domains, $6 created_at, $7 updated_at
INSERT INTO organizations (tenant_id, id, version, name, domains, created_at, updated_at)
VALUES ($1, $2, $3, $4, $5, $6, $7)
ON CONFLICT DO NOTHING
RETURNING id

-- name: update_organization --
-- $1 tenant_id, $2 id, $3 version, $4 name, $5 domains, $6 updated_at, $7 previous version
UPDATE organizations SET version = $3, name = $4, domains = $5, updated_at = $6
 WHERE tenant_id = $1 AND id = $2 AND version = $7

-- name: set_domains --
-- $1 tenant_id, $2 organization id, $3 its domains now
-- Drops what it gave up, claims what is new. A domain another organization holds
-- makes the insert fail with a unique violation: the caller checked domain_holders
-- first, so only a concurrent claim gets that far, and it must not pass silently.
WITH gone AS (
    DELETE FROM organization_domains
     WHERE tenant_id = $1 AND organization_id = $2 AND domain <> ALL ($3::text[])
)
INSERT INTO organization_domains (tenant_id, domain, organization_id)
SELECT $1, d, $2 FROM unnest($3::text[]) AS d
 WHERE NOT EXISTS (SELECT 1 FROM organization_domains o
                    WHERE o.tenant_id = $1 AND o.domain = d AND o.organization_id = $2)

-- name: list_organizations --
-- $1 tenant_id, $2 cursor created_at, $3 cursor id, $4 limit, $5 name (null: any),
-- $6 domain (null: any)
SELECT id, version, name, domains, created_at, updated_at
  FROM organizations
 WHERE tenant_id = $1
   AND (created_at, id) < ($2::timestamptz, $3::uuid)
   AND ($5::text IS NULL OR name_key = lower($5::text))
   AND ($6::text IS NULL OR domains @> ARRAY[lower($6::text)])
 ORDER BY created_at DESC, id DESC
 LIMIT $4

-- name: unlinked_tickets --
-- $1 tenant_id, $2 limit: tickets opened before requesters resolved to contacts
SELECT id, requester FROM tickets
 WHERE tenant_id = $1 AND contact_id IS NULL
 ORDER BY created_at, id
 LIMIT $2

-- name: lock_requester --
-- $1 tenant_id, $2 e-mail (any case)
-- Shared, for the transaction: every opening that resolves this e-mail holds it, so a
-- merge of its contact (which takes it exclusively, merge_lock) waits for the tickets
-- being opened to commit and finds them, and openings after it see the merge. An
-- advisory lock, not a row lock: many openers of one busy requester share it with no
-- write to the contact's row.
SELECT pg_advisory_xact_lock_shared(hashtextextended($1::uuid::text || '/' || lower($2), 0))

-- name: merge_lock --
-- $1 tenant_id, $2 e-mail of the contact being merged
SELECT pg_advisory_xact_lock(hashtextextended($1::uuid::text || '/' || lower($2), 0))

-- name: requester_contact --
-- $1 tenant_id, $2 e-mail (any case), $3 whether to hold the contact's data key
-- The contact holding the e-mail (its columns null when none does) and the
-- organization holding the e-mail's domain: one round trip, whether the opening then
-- links to the contact or creates it. With $3, the contact's data key too, held as
-- data_key_hold holds it, for the ticket's sealing (has_key false: none yet).
SELECT c.id, c.version, c.email, c.name, c.phone, c.external_id, c.organization_id, c.tags,
       c.merged_into, c.created_at, c.updated_at,
       (SELECT d.organization_id FROM organization_domains d
         WHERE d.tenant_id = $1 AND d.domain = lower(split_part($2, '@', 2)))
           AS domain_organization,
       k.subject_id IS NOT NULL AS has_key, k.wrapped, k.kek
  FROM (SELECT 1) AS one
  LEFT JOIN contacts c ON c.tenant_id = $1 AND c.email_key = lower($2)
  LEFT JOIN LATERAL (SELECT subject_id, wrapped, kek FROM data_keys
                      WHERE $3 AND tenant_id = $1 AND subject_id = c.id FOR SHARE) k ON true

-- name: merged_contacts --
-- $1 tenant_id, $2 contact id
-- The contacts merged into this one, those merged into them, and so on: the same
-- person under other records, erased with it.
WITH RECURSIVE merged (id) AS (
    SELECT id FROM contacts WHERE tenant_id = $1 AND merged_into = $2
    UNION
    SELECT c.id FROM contacts c JOIN merged m ON c.tenant_id = $1 AND c.merged_into = m.id)
SELECT id FROM merged ORDER BY id

-- name: lock_tickets_naming --
-- $1 tenant_id, $2 contact ids
-- The tickets whose requester is, or was, one of these contacts: theirs now, and those
-- moved away from them (a ticket moved has a RequesterChanged naming its new
-- requester; its opening, or an earlier change, names the old one). Locked in id order
-- (commands lock one ticket, then its requester's data key: an erasure takes them in
-- the same order, so neither waits on the other in a cycle).
SELECT id FROM tickets
 WHERE tenant_id = $1
   AND (contact_id = ANY ($2::uuid[])
        OR id IN (SELECT o.stream_id
                    FROM events m
                    JOIN events o ON o.tenant_id = m.tenant_id AND o.stream_id = m.stream_id
                   WHERE m.tenant_id = $1 AND m.type = 'RequesterChanged'
                     AND o.type IN ('TicketOpened', 'TicketSplitFrom', 'RequesterChanged')
                     AND o.data -> 'requester' ->> 'contact_id' = ANY ($2::uuid[]::text[])))
 ORDER BY id FOR UPDATE

-- name: lock_tickets_copying --
-- $1 tenant_id, $2 contact ids, $3 ticket ids locked already
-- The tickets that copy one of these contacts (migration 0900), locked in id order.
SELECT t.id FROM tickets t
 WHERE t.tenant_id = $1
   AND t.id IN (SELECT c.ticket_id FROM ticket_contacts c
                 WHERE c.tenant_id = $1 AND c.contact_id = ANY ($2::uuid[]) AND c.role = 'cc')
   AND NOT t.id = ANY ($3::uuid[])
 ORDER BY t.id
   FOR UPDATE

-- name: forget_ticket_contacts --
-- $1 tenant_id, $2 contact ids
DELETE FROM ticket_contacts WHERE tenant_id = $1 AND contact_id = ANY ($2::uuid[])

-- name: tickets_to_redact --
-- $1 tenant_id, $2 ticket ids (locked already)
SELECT id, contact_id, state_json FROM tickets WHERE tenant_id = $1 AND id = ANY ($2::uuid[])
 ORDER BY id

-- name: redact_ticket --
-- $1 tenant_id, $2 id, $3 subject, $4 requester, $5 state_json, $6 view (as text),
-- $7 field values
UPDATE tickets SET subject = $3, requester = $4, state_json = $5, view = $6::text::json,
       fields = $7
 WHERE tenant_id = $1 AND id = $2

-- name: redact_messages --
-- $1 tenant_id, $2 ids of the messages (on whichever ticket they are now: a split moves
-- them)
-- Their files keep their identity (id, size, type, hash) and lose their names.
UPDATE messages SET body = '',
       attachments = (SELECT jsonb_agg(a || '{"name": ""}'::jsonb ORDER BY n)
                        FROM jsonb_array_elements(attachments) WITH ORDINALITY AS f(a, n))
 WHERE tenant_id = $1 AND id = ANY ($2::uuid[])

-- name: contact_ticket_views --
-- $1 tenant_id, $2 contact_id
-- Every ticket of the contact as the API sends it, oldest first (an export: whole).
SELECT id, view::text AS view FROM tickets WHERE tenant_id = $1 AND contact_id = $2
 ORDER BY created_at, id

-- name: contact_messages --
-- $1 tenant_id, $2 ticket ids
SELECT id, ticket_id, version, visibility, author_kind, author_id, body, created_at,
       attachments
  FROM messages WHERE tenant_id = $1 AND ticket_id = ANY($2)
 ORDER BY ticket_id, created_at, id
