-- name: limits --
-- $1 tenant_id
-- The tenant's file limits as its settings document holds them (NULL: the defaults).
SELECT settings -> 'attachments' AS attachments
  FROM tenant_settings WHERE tenant_id = $1

-- name: blob_begin --
-- $1 tenant_id, $2 blob id, $3 storage, $4 chunk size, $5 wrapped key, $6 kek,
-- $7 writer kind, $8 writer id, $9 created_at
INSERT INTO file_blobs (tenant_id, id, state, storage, chunk_size, wrapped_key, kek,
                        created_by_kind, created_by_id, created_at)
VALUES ($1, $2, 'receiving', $3, $4, $5, $6, $7, $8, $9)

-- name: writes_paused --
-- $1 tenant_id: the Retry-After of a tenant whose writes are paused for a move (NULL:
-- they go on); an upload appends no event, so the insert trigger cannot refuse it
SELECT paused_retry_after FROM tenant_heads WHERE tenant_id = $1

-- name: blob_stored --
-- $1 tenant_id, $2 blob id, $3 sha256, $4 size
UPDATE file_blobs SET state = 'stored', sha256 = $3, size = $4
 WHERE tenant_id = $1 AND id = $2 AND state = 'receiving'

-- name: blob_forget --
-- $1 tenant_id, $2 blob id
-- An upload that did not complete: its row and (by cascade) its chunk rows.
DELETE FROM file_blobs WHERE tenant_id = $1 AND id = $2 AND state = 'receiving'

-- name: upload_insert --
-- $1 tenant_id, $2 id, $3 blob id, $4 name, $5 type, $6 size, $7 sha256, $8 uploader kind,
-- $9 uploader id, $10 created_at
INSERT INTO uploads (tenant_id, id, blob_id, name, content_type, size, sha256,
                     uploaded_by_kind, uploaded_by_id, created_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)

-- name: uploads_claim --
-- $1 tenant_id, $2 upload ids, $3 the ticket the message goes on (NULL: a new one)
-- Locked until commit, so two commands cannot both attach one upload. Row-level
-- security shows a customer or widget session its own unattached uploads only. The
-- tenant's file limits come along (on every row, and on a row of NULLs when no upload
-- is found), and so do the ticket's requester contact and, per upload, a blob of the
-- same bytes that contact holds already (deduplication): claiming is one round trip.
WITH limits AS (SELECT settings -> 'attachments' AS attachments
                  FROM tenant_settings WHERE tenant_id = $1),
     owner AS (SELECT contact_id FROM tickets WHERE tenant_id = $1 AND id = $3),
     found AS (SELECT u.id, u.name, u.content_type, u.size, u.sha256, u.ticket_id,
                      u.blob_id, b.subject_id, b.wrapped_key, b.kek
                 FROM uploads u
                 JOIN file_blobs b ON b.tenant_id = u.tenant_id AND b.id = u.blob_id
                WHERE u.tenant_id = $1 AND u.id = ANY($2::uuid[])
                  FOR UPDATE OF u)
SELECT f.*, (SELECT attachments FROM limits) AS limits,
       (SELECT contact_id FROM owner) AS owner,
       (SELECT s.id FROM file_blobs s
         WHERE s.tenant_id = $1 AND s.subject_id = (SELECT contact_id FROM owner)
           AND s.sha256 = f.sha256 AND s.state = 'stored'
         ORDER BY s.created_at, s.id LIMIT 1) AS shared
  FROM (SELECT 1) AS one LEFT JOIN found f ON true

-- name: uploads_attach --
-- $1 tenant_id, $2 upload ids, $3 ticket id, $4 message id, $5 visibility, $6 attached_at
-- The uploads were claimed (uploads_claim) in this transaction: locked, and seen
-- unattached. So no "ticket_id IS NULL" here: with it the planner takes the partial
-- index of unattached uploads (tenant_id alone, at the same estimated cost as the
-- primary key) and filters every unattached upload of the tenant, row-level security
-- included, at every attach (1 ms and more with 2,000 of them waiting).
UPDATE uploads SET ticket_id = $3, message_id = $4, visibility = $5, attached_at = $6
 WHERE tenant_id = $1 AND id = ANY($2::uuid[])

-- name: uploads_move --
-- $1 tenant_id, $2 message ids, $3 the ticket they moved to (a split): their files go
-- with them, so the new ticket's readers may fetch them
UPDATE uploads SET ticket_id = $3
 WHERE tenant_id = $1 AND message_id = ANY($2::uuid[]) AND ticket_id IS NOT NULL

-- name: subjects_blobs --
-- $1 tenant_id, $2 and $3 the (subject, sha256 digest) pairs asked for
-- The blobs subjects already hold with these contents (deduplication; ``attach_many``,
-- ``for_owners``): for each pair, the blob the subject holds with those contents, the
-- first made.
SELECT DISTINCT ON (b.subject_id, b.sha256) b.subject_id, b.sha256, b.id
  FROM file_blobs b
  JOIN unnest($2::uuid[], $3::bytea[]) AS w(subject_id, sha256)
    ON b.subject_id = w.subject_id AND b.sha256 = w.sha256
 WHERE b.tenant_id = $1 AND b.state = 'stored'
 ORDER BY b.subject_id, b.sha256, b.created_at, b.id

-- name: upload_share_blob --
-- $1 tenant_id, $2 upload id, $3 blob id
UPDATE uploads SET blob_id = $3 WHERE tenant_id = $1 AND id = $2

-- name: blob_seal --
-- $1 tenant_id, $2 blob id, $3 subject, $4 key wrapped by the subject's data key
UPDATE file_blobs SET subject_id = $3, wrapped_key = $4, kek = NULL
 WHERE tenant_id = $1 AND id = $2 AND subject_id IS NULL

-- name: download --
-- $1 tenant_id, $2 upload id
SELECT u.id, u.name, u.content_type, u.size, u.sha256, u.ticket_id, u.message_id,
       u.visibility, u.uploaded_by_kind, u.uploaded_by_id, u.created_at, u.attached_at,
       b.id AS blob_id, b.storage, b.subject_id, b.wrapped_key, b.kek
  FROM uploads u
  LEFT JOIN file_blobs b ON b.tenant_id = u.tenant_id AND b.id = u.blob_id
 WHERE u.tenant_id = $1 AND u.id = $2

-- name: erase_uploads --
-- $1 tenant_id, $2 subjects
-- The uploads on erased subjects' blobs lose their blob and their name.
UPDATE uploads u SET blob_id = NULL, name = ''
  FROM file_blobs b
 WHERE u.tenant_id = $1 AND b.tenant_id = $1 AND b.id = u.blob_id
   AND b.subject_id = ANY($2::uuid[])

-- name: erase_blobs --
-- $1 tenant_id, $2 subjects
DELETE FROM file_blobs WHERE tenant_id = $1 AND subject_id = ANY($2::uuid[])
RETURNING id, storage

-- name: ticket_files --
-- $1 tenant_id, $2 ticket ids
SELECT id, ticket_id, message_id, name, content_type, size, sha256, visibility,
       attached_at, blob_id IS NULL AS erased
  FROM uploads
 WHERE tenant_id = $1 AND ticket_id = ANY($2::uuid[])
 ORDER BY attached_at, id

-- name: stored_blobs --
-- $1 tenant_id, $2 after blob id, $3 limit
SELECT id, storage, sha256, size, subject_id, wrapped_key, kek
  FROM file_blobs
 WHERE tenant_id = $1 AND state = 'stored' AND id > $2
 ORDER BY id
 LIMIT $3

-- name: attached_hashes --
-- $1 tenant_id
SELECT u.id, u.sha256, b.sha256 AS blob_sha256, u.blob_id IS NULL AS erased
  FROM uploads u
  LEFT JOIN file_blobs b ON b.tenant_id = u.tenant_id AND b.id = u.blob_id
 WHERE u.tenant_id = $1 AND u.ticket_id IS NOT NULL

-- name: blobs_stored --
-- $1 tenant_id, $2 blob ids, $3 sha256 digests in hex, $4 sizes (by position)
-- blob_stored of several blobs in one statement (the digests as text: a deferred write
-- has no literal for an array of bytea, eventstore/literal.py).
UPDATE file_blobs b SET state = 'stored', sha256 = decode(w.sha256, 'hex'), size = w.size
  FROM unnest($2::uuid[], $3::text[], $4::bigint[]) AS w(id, sha256, size)
 WHERE b.tenant_id = $1 AND b.id = w.id AND b.state = 'receiving'

-- name: uploads_insert --
-- $1 tenant_id, $2 ids, $3 blob ids, $4 names, $5 types, $6 sizes, $7 sha256 digests
-- in hex, $10 created_at as ISO texts (arrays, by position), $8 uploader kind, $9
-- uploader id
-- upload_insert of several uploads by one uploader in one statement (digests and times
-- as texts: a deferred write has no literal for an array of bytea or timestamptz).
INSERT INTO uploads (tenant_id, id, blob_id, name, content_type, size, sha256,
                     uploaded_by_kind, uploaded_by_id, created_at)
SELECT $1, u.id, u.blob_id, u.name, u.content_type, u.size, decode(u.sha256, 'hex'), $8,
       $9, u.created_at::timestamptz
  FROM unnest($2::uuid[], $3::uuid[], $4::text[], $5::text[], $6::bigint[], $7::text[],
              $10::text[])
           AS u(id, blob_id, name, content_type, size, sha256, created_at)
