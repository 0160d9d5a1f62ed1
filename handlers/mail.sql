-- name: mailbox_insert --
-- $1 tenant_id, $2 id, $3 address, $4 name, $5 inbound_secret_hash, $6 smtp, $7 smtp_password,
-- $8 kek, $9 at, $10 imap, $11 imap_password, $12 imap_kek, $13 dkim, $14 dkim_key,
-- $15 dkim_kek
INSERT INTO mailboxes (tenant_id, id, address, name, inbound_secret_hash, smtp, smtp_password,
                       kek, version, created_at, updated_at, imap, imap_password, imap_kek,
                       dkim, dkim_key, dkim_kek)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, 1, $9, $9, $10, $11, $12, $13, $14, $15)
ON CONFLICT DO NOTHING
RETURNING id, address, name, smtp, imap, dkim, version, last_error, last_error_at, last_ok_at,
          created_at, updated_at, smtp_password IS NOT NULL AS smtp_password_set,
          imap_password IS NOT NULL AS imap_password_set, dkim_key IS NOT NULL AS dkim_key_set

-- name: mailbox_update --
-- $1 tenant_id, $2 id, $3 name, $4 smtp, $5 smtp_password, $6 kek, $7 at, $8 imap,
-- $9 imap_password, $10 imap_kek, $11 dkim, $12 dkim_key, $13 dkim_kek
UPDATE mailboxes SET name = $3, smtp = $4, smtp_password = $5, kek = $6,
       imap = $8, imap_password = $9, imap_kek = $10,
       dkim = $11, dkim_key = $12, dkim_kek = $13,
       version = version + 1, updated_at = $7
 WHERE tenant_id = $1 AND id = $2
RETURNING id, address, name, smtp, imap, dkim, version, last_error, last_error_at, last_ok_at,
          created_at, updated_at, smtp_password IS NOT NULL AS smtp_password_set,
          imap_password IS NOT NULL AS imap_password_set, dkim_key IS NOT NULL AS dkim_key_set

-- name: mailbox_get --
-- $1 tenant_id, $2 id
SELECT id, address, name, smtp, imap, dkim, version, last_error, last_error_at, last_ok_at,
       created_at, updated_at, smtp_password, kek, imap_password, imap_kek, imap_uidvalidity,
       imap_last_uid, dkim_key, dkim_kek, smtp_password IS NOT NULL AS smtp_password_set,
       imap_password IS NOT NULL AS imap_password_set, dkim_key IS NOT NULL AS dkim_key_set
  FROM mailboxes WHERE tenant_id = $1 AND id = $2

-- name: mailbox_lock --
-- $1 tenant_id, $2 id
SELECT id, address, name, smtp, imap, dkim, version, smtp_password, kek, imap_password,
       imap_kek, dkim_key, dkim_kek
  FROM mailboxes WHERE tenant_id = $1 AND id = $2 FOR UPDATE

-- name: mailbox_page --
-- $1 tenant_id, $2 after created_at (NULL: from the start), $3 after id, $4 limit
SELECT id, address, name, smtp, imap, dkim, version, last_error, last_error_at, last_ok_at,
       created_at, updated_at, smtp_password IS NOT NULL AS smtp_password_set,
       imap_password IS NOT NULL AS imap_password_set, dkim_key IS NOT NULL AS dkim_key_set
  FROM mailboxes
 WHERE tenant_id = $1 AND ($2::timestamptz IS NULL OR (created_at, id) > ($2, $3))
 ORDER BY created_at, id
 LIMIT $4

-- name: imap_mailboxes --
-- $1 tenant_id
SELECT id FROM mailboxes WHERE tenant_id = $1 AND imap IS NOT NULL ORDER BY created_at, id

-- name: imap_checkpoint --
-- $1 tenant_id, $2 id, $3 uidvalidity, $4 last uid
-- Never backwards within one UIDVALIDITY: a poll that lost a race leaves the later one.
UPDATE mailboxes
   SET imap_uidvalidity = $3,
       imap_last_uid = CASE WHEN imap_uidvalidity IS DISTINCT FROM $3 THEN $4
                            ELSE greatest(imap_last_uid, $4) END
 WHERE tenant_id = $1 AND id = $2

-- name: mailbox_addresses --
-- $1 tenant_id
-- The desk's own addresses: mail from any of them is never taken in.
SELECT lower(address) AS address FROM mailboxes WHERE tenant_id = $1

-- name: mailbox_lookup --
-- $1 mailbox id
SELECT tenant_id, inbound_secret_hash FROM mailbox_lookup($1)

-- name: mailbox_failed --
-- $1 tenant_id, $2 id, $3 error, $4 at
UPDATE mailboxes SET last_error = $3, last_error_at = $4 WHERE tenant_id = $1 AND id = $2

-- name: mailbox_ok --
-- $1 tenant_id, $2 id, $3 at
UPDATE mailboxes SET last_ok_at = $3 WHERE tenant_id = $1 AND id = $2

-- name: mail_health --
SELECT mailboxes, failing FROM mail_health()

-- name: mail_seen --
-- $1 tenant_id, $2 rfc Message-IDs
-- Those of the Message-IDs the tenant has sent or taken in: one look-up for a run of
-- mails (handlers/mail_in.py), each an index probe on mail_messages_rfc_id.
SELECT rfc_message_id, id, outcome, ticket_id FROM mail_messages
 WHERE tenant_id = $1 AND rfc_message_id = ANY($2::text[])

-- name: mail_insert --
-- $1 tenant_id, $2 id, $3 mailbox_id, $4 direction, $5 rfc_message_id, $6 ticket_id,
-- $7 message_id, $8 from, $9 to, $10 cc, $11 outcome, $12 reason, $13 at
-- Nothing when the Message-ID is known already: the mail was taken in (or sent) before.
INSERT INTO mail_messages (tenant_id, id, mailbox_id, direction, rfc_message_id, ticket_id,
                           message_id, from_address, to_addresses, cc_addresses, outcome,
                           reason, created_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)
ON CONFLICT DO NOTHING
RETURNING id

-- name: mail_insert_strict --
-- $1 tenant_id, $2 id, $3 mailbox_id, $4 direction, $5 rfc_message_id, $6 ticket_id,
-- $7 message_id, $8 from, $9 to, $10 cc, $11 outcome, $12 reason, $13 at
-- mail_insert for a write deferred to the COMMIT, whose answer nobody reads: a
-- Message-ID known already fails the transaction (and so undoes what came with it).
INSERT INTO mail_messages (tenant_id, id, mailbox_id, direction, rfc_message_id, ticket_id,
                           message_id, from_address, to_addresses, cc_addresses, outcome,
                           reason, created_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)

-- name: mail_thread_of_ids --
-- $1 tenant_id, $2 Message-IDs
-- The ticket of the first of these Message-IDs the desk sent or took in.
SELECT m.ticket_id
  FROM unnest($2::text[]) WITH ORDINALITY AS r(rfc_id, n)
  JOIN mail_messages m ON m.tenant_id = $1 AND m.rfc_message_id = r.rfc_id
 WHERE m.ticket_id IS NOT NULL
 ORDER BY r.n
 LIMIT 1

-- name: mail_thread_of_token --
-- $1 tenant_id, $2 token
SELECT ticket_id FROM mail_threads WHERE tenant_id = $1 AND token = $2

-- name: mail_thread_insert --
-- $1 tenant_id, $2 ticket_id, $3 mailbox_id, $4 token, $5 at
INSERT INTO mail_threads (tenant_id, ticket_id, mailbox_id, token, created_at)
VALUES ($1, $2, $3, $4, $5)
ON CONFLICT DO NOTHING

-- name: mail_thread_split --
-- $1 tenant_id, $2 source ticket, $3 the ticket split off it, $4 its token, $5 at,
-- $6 the moved message ids
-- A split-off of a mail ticket gets a thread of its own on the source's mailbox, and the
-- mail rows of the moved messages go with them: its replies answer that mail, and mail
-- answering them threads onto it (docs/email.md, "A split-off of a mail ticket").
WITH thread AS (
    INSERT INTO mail_threads (tenant_id, ticket_id, mailbox_id, token, created_at)
    SELECT tenant_id, $3, mailbox_id, $4, $5 FROM mail_threads
     WHERE tenant_id = $1 AND ticket_id = $2
    RETURNING mailbox_id
)
UPDATE mail_messages SET ticket_id = $3
 WHERE tenant_id = $1 AND ticket_id = $2 AND message_id = ANY ($6::uuid[])

-- name: message_ticket --
-- $1 tenant_id, $2 message id
-- The ticket a message is on now: a split moves it (and its mail) to the split-off.
SELECT ticket_id FROM messages WHERE tenant_id = $1 AND id = $2

-- name: mail_thread_get --
-- $1 tenant_id, $2 ticket_id
SELECT t.ticket_id, t.mailbox_id, t.token FROM mail_threads t
 WHERE t.tenant_id = $1 AND t.ticket_id = $2

-- name: mail_sender_recent --
-- $1 tenant_id, $2 addresses, $3 since
-- Mail taken in from each address since $3: one look-up for a run of mails, each
-- address a range of mail_messages_sender.
SELECT a.address,
       (SELECT count(*) FROM mail_messages m
         WHERE m.tenant_id = $1 AND m.direction = 'in'
           AND lower(m.from_address) = lower(a.address) AND m.created_at > $3) AS n
  FROM unnest($2::text[]) AS a(address)

-- name: mail_bounce_put --
-- $1 tenant_id, $2 address, $3 status, $4 reason, $5 at
INSERT INTO mail_bounces (tenant_id, address, status, reason, bounced_at)
VALUES ($1, lower($2), $3, $4, $5)
ON CONFLICT (tenant_id, address) DO UPDATE
   SET status = excluded.status, reason = excluded.reason, bounced_at = excluded.bounced_at

-- name: mail_bouncing --
-- $1 tenant_id, $2 addresses
SELECT address, status, reason, bounced_at FROM mail_bounces
 WHERE tenant_id = $1 AND address = ANY ($2::text[])

-- name: mail_forget --
-- $1 tenant_id, $2 ticket ids, $3 e-mail addresses (lower case)
-- An erasure: the addresses on the mail of the contact's tickets, and of its own mail
-- that made no ticket, are blanked; its bounce record goes.
WITH blanked AS (
    UPDATE mail_messages SET from_address = '', to_addresses = '{}', cc_addresses = '{}'
     WHERE tenant_id = $1
       AND (ticket_id = ANY ($2::uuid[]) OR lower(from_address) = ANY ($3::text[]))
    RETURNING 1
)
DELETE FROM mail_bounces WHERE tenant_id = $1 AND address = ANY ($3::text[])

-- name: mail_of_ticket --
-- $1 tenant_id, $2 ticket_id
SELECT id, mailbox_id, direction, rfc_message_id, message_id, from_address, to_addresses,
       cc_addresses, outcome, reason, attempts, created_at, sent_at
  FROM mail_messages WHERE tenant_id = $1 AND ticket_id = $2
 ORDER BY created_at, id

-- name: quarantine_insert --
-- $1 tenant_id, $2 id, $3 mailbox_id, $4 raw (sealed), $5 kek, $6 size, $7 reason, $8 at,
-- $9 headline (sealed), $10 headline_kek
INSERT INTO mail_quarantine (tenant_id, id, mailbox_id, raw, kek, size, reason, received_at,
                             headline, headline_kek)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)

-- name: quarantine_page --
-- $1 tenant_id, $2 mailbox_id, $3 after received_at, $4 after id, $5 limit
SELECT id, mailbox_id, size, reason, attempts, received_at AS created_at, retried_at,
       headline, headline_kek
  FROM mail_quarantine
 WHERE tenant_id = $1 AND mailbox_id = $2
   AND ($3::timestamptz IS NULL OR (received_at, id) > ($3, $4))
 ORDER BY received_at, id
 LIMIT $5

-- name: quarantine_raw --
-- $1 tenant_id, $2 mailbox_id, $3 id
SELECT raw, kek FROM mail_quarantine WHERE tenant_id = $1 AND mailbox_id = $2 AND id = $3

-- name: quarantine_sealed --
-- $1 tenant_id
-- Every quarantined mail, locked: an erasure opens each to find those naming the contact.
SELECT id, raw, kek FROM mail_quarantine WHERE tenant_id = $1 ORDER BY id FOR UPDATE

-- name: quarantine_forget --
-- $1 tenant_id, $2 ids
DELETE FROM mail_quarantine WHERE tenant_id = $1 AND id = ANY ($2::uuid[])

-- name: quarantine_failed_again --
-- $1 tenant_id, $2 id, $3 reason, $4 at
UPDATE mail_quarantine SET reason = $3, attempts = attempts + 1, retried_at = $4
 WHERE tenant_id = $1 AND id = $2
RETURNING id, mailbox_id, size, reason, attempts, received_at AS created_at, retried_at,
          headline, headline_kek

-- name: quarantine_delete --
-- $1 tenant_id, $2 mailbox_id, $3 id
DELETE FROM mail_quarantine WHERE tenant_id = $1 AND mailbox_id = $2 AND id = $3
RETURNING id, mailbox_id, size, reason, attempts, received_at AS created_at, retried_at,
          headline, headline_kek

-- name: outbound_take --
-- $1 tenant_id, $2 message id (the ticket message)
SELECT id, rfc_message_id, outcome, attempts, to_addresses, cc_addresses FROM mail_messages
 WHERE tenant_id = $1 AND direction = 'out' AND message_id = $2 FOR UPDATE

-- name: outbound_done --
-- $1 tenant_id, $2 id, $3 outcome, $4 reason, $5 at (sent_at, NULL unless sent)
UPDATE mail_messages SET outcome = $3, reason = $4, attempts = attempts + 1, sent_at = $5
 WHERE tenant_id = $1 AND id = $2

-- name: outbound_thread_ids --
-- $1 tenant_id, $2 ticket_id
-- The Message-IDs of a ticket's mail, oldest first: the References of a reply.
SELECT rfc_message_id, direction FROM mail_messages
 WHERE tenant_id = $1 AND ticket_id = $2 AND outcome <> 'dead'
 ORDER BY created_at, id

-- name: sending_mailbox --
-- $1 tenant_id, $2 preferred mailbox (NULL: none)
-- The mailbox notification mail goes out from: the preferred one (a mail ticket's) when
-- it has SMTP, else the tenant's first mailbox with SMTP.
SELECT id, address, name FROM mailboxes
 WHERE tenant_id = $1 AND smtp IS NOT NULL
 ORDER BY id IS NOT DISTINCT FROM $2 DESC, created_at, id
 LIMIT 1

-- name: tenant_slug --
-- $1 tenant_id
SELECT slug FROM tenants WHERE id = $1

-- name: notice_insert --
-- $1 tenant_id, $2 id, $3 kind, $4 dedupe_key, $5 mailbox_id, $6 to, $7 ticket_id,
-- $8 rfc_message_id, $9 data (sealed), $10 kek, $11 status, $12 reason, $13 at
-- Nothing when the notification was made already (a retried job): its row stands.
INSERT INTO mail_notifications (tenant_id, id, kind, dedupe_key, mailbox_id, to_address,
                                ticket_id, rfc_message_id, data, kek, status, reason,
                                created_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)
ON CONFLICT DO NOTHING

-- name: notices_by_keys --
-- $1 tenant_id, $2 dedupe keys
SELECT id FROM mail_notifications WHERE tenant_id = $1 AND dedupe_key = ANY ($2::text[])
 ORDER BY dedupe_key

-- name: notice_take --
-- $1 tenant_id, $2 id
SELECT id, kind, mailbox_id, to_address, ticket_id, rfc_message_id, data, kek, status,
       attempts
  FROM mail_notifications WHERE tenant_id = $1 AND id = $2 FOR UPDATE

-- name: notice_done --
-- $1 tenant_id, $2 id, $3 status, $4 reason, $5 at (sent_at, NULL unless sent)
-- Sent or dead, the values (an invitation's token among them) are kept no longer.
UPDATE mail_notifications
   SET status = $3, reason = $4, attempts = attempts + 1, sent_at = $5,
       data = CASE WHEN $3 = 'queued' THEN data END,
       kek = CASE WHEN $3 = 'queued' THEN kek END
 WHERE tenant_id = $1 AND id = $2

-- name: notice_agents --
-- $1 tenant_id, $2 agent ids (NULL: the active admins)
SELECT id, email, name FROM agents
 WHERE tenant_id = $1 AND active
   AND (CASE WHEN $2::uuid[] IS NULL THEN role = 'admin' ELSE id = ANY ($2::uuid[]) END)
 ORDER BY id

-- name: notice_first_mail --
-- $1 tenant_id, $2 ticket_id
-- The mail a ticket was opened by: what its acknowledgement answers.
SELECT rfc_message_id FROM mail_messages
 WHERE tenant_id = $1 AND ticket_id = $2 AND direction = 'in'
 ORDER BY created_at, id
 LIMIT 1

-- name: notices_forget --
-- $1 tenant_id, $2 e-mail addresses (lower case)
-- An erasure: the address goes, and so does a mail still waiting to be sent to it.
UPDATE mail_notifications
   SET to_address = '', data = NULL, kek = NULL,
       status = CASE WHEN status = 'queued' THEN 'dead' ELSE status END,
       reason = CASE WHEN status = 'queued' THEN 'the recipient was erased' ELSE reason END
 WHERE tenant_id = $1 AND lower(to_address) = ANY ($2::text[])

-- name: mail_ticket_copies --
-- $1 tenant_id, $2 ticket_id
-- The addresses the mail a ticket took in was sent or copied to, oldest first: with the
-- ticket's own CCs, whom its replies are copied to (the desk's own addresses are
-- among them, and left out by the caller).
SELECT a.address
  FROM mail_messages m,
       unnest(m.to_addresses || m.cc_addresses) WITH ORDINALITY AS a(address, n)
 WHERE m.tenant_id = $1 AND m.ticket_id = $2 AND m.direction = 'in'
 ORDER BY m.created_at, m.id, a.n

-- name: mail_ticket_copied --
-- $1 tenant_id, $2 ticket_id, $3 address (lower case)
-- Whether the address is one of the ticket's CCs: an address the mail it took in was
-- sent or copied to (tickets keep no CCs of their own; the mail rows are them).
SELECT EXISTS (SELECT 1 FROM mail_messages
                WHERE tenant_id = $1 AND ticket_id = $2 AND direction = 'in'
                  AND ($3 = ANY (cc_addresses) OR $3 = ANY (to_addresses)))

-- name: mailbox_used --
-- $1 tenant_id, $2 id
-- Whether anything names the mailbox: mail it took in or sent, a thread, the quarantine,
-- a notification.
SELECT EXISTS (SELECT 1 FROM mail_messages WHERE tenant_id = $1 AND mailbox_id = $2)
    OR EXISTS (SELECT 1 FROM mail_threads WHERE tenant_id = $1 AND mailbox_id = $2)
    OR EXISTS (SELECT 1 FROM mail_quarantine WHERE tenant_id = $1 AND mailbox_id = $2)
    OR EXISTS (SELECT 1 FROM mail_notifications WHERE tenant_id = $1 AND mailbox_id = $2)

-- name: mailbox_delete --
-- $1 tenant_id, $2 id
DELETE FROM mailboxes WHERE tenant_id = $1 AND id = $2
RETURNING id, address, name, smtp, imap, dkim, version, last_error, last_error_at, last_ok_at,
          created_at, updated_at, smtp_password IS NOT NULL AS smtp_password_set,
          imap_password IS NOT NULL AS imap_password_set, dkim_key IS NOT NULL AS dkim_key_set

-- name: imap_poll_now --
-- $1 tenant_id, $2 now
-- IDLE said a message arrived: the tenant's waiting mail.poll job is due now (the
-- update's own NOTIFY wakes the schedulers). Nothing moves while the poll runs, since
-- that run may have looked before the message arrived: the caller tries again.
UPDATE jobs SET run_at = least(run_at, $2), updated_at = $2
 WHERE tenant_id = $1 AND dedupe_key = 'mail.poll' AND status = 'ready'
RETURNING id

-- name: imap_poll_live --
-- $1 tenant_id
SELECT count(*) FROM jobs
 WHERE tenant_id = $1 AND dedupe_key = 'mail.poll' AND status IN ('ready', 'running')

-- name: notice_page --
-- $1 tenant_id, $2 kind (NULL: any), $3 status (NULL: any), $4 recipient in lower case
-- (NULL: any), $5 ticket_id (NULL: any), $6 after created_at (NULL: from the start),
-- $7 after id, $8 limit
SELECT id, kind, mailbox_id, to_address, ticket_id, rfc_message_id, status, reason, attempts,
       created_at, sent_at
  FROM mail_notifications
 WHERE tenant_id = $1
   AND ($2::text IS NULL OR kind = $2) AND ($3::text IS NULL OR status = $3)
   AND ($4::text IS NULL OR lower(to_address) = $4) AND ($5::uuid IS NULL OR ticket_id = $5)
   AND ($6::timestamptz IS NULL OR (created_at, id) > ($6, $7))
 ORDER BY created_at, id
 LIMIT $8

-- name: mail_insert_many --
-- $1 tenant_id, $2 mailbox_id, $3 at, $4 the rows as JSON text: an array of objects with
-- id, rfc_message_id, ticket_id, message_id, from_address, to_addresses, cc_addresses,
-- outcome, reason
-- mail_insert_strict of a run's mails taken in (direction 'in'), in one statement: a
-- Message-ID known already fails the transaction, as there.
INSERT INTO mail_messages (tenant_id, id, mailbox_id, direction, rfc_message_id, ticket_id,
                           message_id, from_address, to_addresses, cc_addresses, outcome,
                           reason, created_at)
SELECT $1, m.id, $2, 'in', m.rfc_message_id, m.ticket_id, m.message_id, m.from_address,
       m.to_addresses, m.cc_addresses, m.outcome, m.reason, $3
  FROM jsonb_to_recordset($4::text::jsonb) AS m(
           id uuid, rfc_message_id text, ticket_id uuid, message_id uuid, from_address text,
           to_addresses text[], cc_addresses text[], outcome text, reason text)

-- name: mail_threads_insert --
-- $1 tenant_id, $2 mailbox_id, $3 ticket ids, $4 their tokens (by position), $5 at
-- mail_thread_insert of several new tickets in one statement.
INSERT INTO mail_threads (tenant_id, ticket_id, mailbox_id, token, created_at)
SELECT $1, t.ticket_id, $2, t.token, $5
  FROM unnest($3::uuid[], $4::text[]) AS t(ticket_id, token)
ON CONFLICT DO NOTHING
