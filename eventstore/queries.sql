-- name: arm --
-- $1 tenant_id, $2 actor_kind (or NULL), $3 actor_id (or NULL)
-- Transaction-local settings only: a pooled connection must never carry a tenant
-- into the next transaction. A unit of work sends the same statement inside its
-- BEGIN's message instead (eventstore/pool.py, arm_statement).
SELECT set_config('app.tenant_id', $1::text, true),
       set_config('app.actor_kind', coalesce($2, ''), true),
       set_config('app.actor_id', coalesce($3, ''), true)

-- name: append --
-- $1 tenant_id, $2 stream_id, $3 expected version (NULL = any), $4 types,
-- $5 schema versions, $6 data, $7 metadata
-- Stream lock, version check and insert in one call (migration 0004); a stale
-- expected version raises SQLSTATE HD004 with the current version as DETAIL.
-- seq, hash, actor and recorded_at come from the insert trigger.
SELECT tenant_id, seq, stream_id, version, type, schema_version, data, metadata,
       actor_kind, actor_id, recorded_at, hash
  FROM append_events($1, $2, $3, $4, $5, $6, $7)

-- name: append_at_commit --
-- $1 tenant_id, $2 stream_id, $3 expected version (NULL = any), $4 types,
-- $5 schema versions, $6 data (JSON texts), $7 metadata (JSON texts)
-- ``append`` as a unit of work sends it in its COMMIT's message: nobody reads its rows,
-- so none come back (p_quiet, migration 0531).
SELECT count(*) FROM append_events($1::uuid, $2::uuid, $3::integer, $4::text[],
                                   $5::integer[], $6::jsonb[], $7::jsonb[], true)

-- name: stream_version --
-- $1 tenant_id, $2 stream_id
-- The last version in the (tenant_id, stream_id, version) index's order: one row read,
-- where max(version) under row-level security aggregated over a scan (migration 0531).
SELECT coalesce((SELECT version FROM events WHERE tenant_id = $1 AND stream_id = $2
                  ORDER BY tenant_id DESC, stream_id DESC, version DESC LIMIT 1), 0)

-- name: read_stream --
-- $1 tenant_id, $2 stream_id, $3 to_version (NULL = all)
SELECT tenant_id, seq, stream_id, version, type, schema_version, data, metadata,
       actor_kind, actor_id, recorded_at, hash
  FROM events
 WHERE tenant_id = $1 AND stream_id = $2 AND ($3::int IS NULL OR version <= $3::int)
 ORDER BY version

-- name: read_tenant --
-- $1 tenant_id, $2 after_seq, $3 limit
SELECT tenant_id, seq, stream_id, version, type, schema_version, data, metadata,
       actor_kind, actor_id, recorded_at, hash
  FROM events
 WHERE tenant_id = $1 AND seq > $2
 ORDER BY seq
 LIMIT $3

-- name: changes --
-- $1 tenant_id, $2 after seq, $3 up to seq (the end of the window looked at),
-- $4 types (NULL = all), $5 limit
-- The head and the events are read in one statement, so from one snapshot: every seq
-- up to that head has committed (appends hold the head row to their commit), and the
-- caller may move its cursor to min(window end, head) when the page is not full,
-- past filtered-out events, without ever stepping over one that commits later. The
-- LEFT JOIN keeps the head row when no event matches.
-- The payload comes as its JSON text: a reader that passes it on as it is (the
-- common case, a payload already in its current shape) never decodes it.
SELECT h.seq AS head_seq, e.seq, e.stream_id, e.version, e.type, e.schema_version,
       e.data::text AS data_json, e.actor_kind, e.actor_id, e.recorded_at
  FROM tenant_heads h
  LEFT JOIN LATERAL (
        SELECT seq, stream_id, version, type, schema_version, data, actor_kind, actor_id,
               recorded_at
          FROM events
         WHERE tenant_id = $1
           AND seq > $2
           AND seq <= least($3::bigint, h.seq)
           AND ($4::text[] IS NULL OR type = ANY ($4::text[]))
         ORDER BY seq
         LIMIT $5) e ON true
 WHERE h.tenant_id = $1
 ORDER BY e.seq

-- name: head --
-- $1 tenant_id
SELECT seq, hash FROM tenant_heads WHERE tenant_id = $1

-- name: verify_chain --
-- $1 tenant_id, $2 from_seq, $3 to_seq
-- Each link is checked against the stored hash of the link before it, so one pass
-- with lag() finds the first altered, missing or reordered event. The row before
-- the range is read too, so a range can be checked on its own.
WITH r AS (
    SELECT seq,
           hash,
           lag(seq) OVER w AS prev_seq,
           lag(hash) OVER w AS prev_hash,
           event_canonical(tenant_id, seq, stream_id, version, type, schema_version,
                           data, metadata, actor_kind, actor_id, recorded_at) AS canon
      FROM events
     WHERE tenant_id = $1 AND seq BETWEEN greatest($2::bigint - 1, 1) AND $3::bigint
    WINDOW w AS (ORDER BY seq)
),
checks AS (
    SELECT seq,
           prev_seq,
           CASE WHEN seq = 1 THEN hash = sha256(
                    '\x0000000000000000000000000000000000000000000000000000000000000000'::bytea
                    || canon)
                WHEN prev_seq = seq - 1 THEN hash = sha256(prev_hash || canon)
                ELSE false
           END AS ok
      FROM r
)
SELECT (SELECT count(*) FROM checks WHERE seq >= $2) AS checked,
       (SELECT min(CASE WHEN prev_seq IS NULL AND seq > 1 THEN least(greatest($2::bigint - 1, 1), seq)
                        WHEN prev_seq IS NOT NULL AND prev_seq <> seq - 1 THEN prev_seq + 1
                        ELSE seq END)
          FROM checks WHERE seq >= $2 AND NOT ok) AS first_bad,
       (SELECT max(seq) FROM checks) AS last_seq,
       (SELECT hash FROM r ORDER BY seq DESC LIMIT 1) AS last_hash
-- name: stream_first_type --
-- $1 tenant_id, $2 stream_id
SELECT type FROM events WHERE tenant_id = $1 AND stream_id = $2 AND version = 1

-- name: stream_page --
-- $1 tenant_id, $2 stream_id, $3 after version, $4 limit
SELECT tenant_id, seq, stream_id, version, type, schema_version, data, metadata,
       actor_kind, actor_id, recorded_at, hash
  FROM events
 WHERE tenant_id = $1 AND stream_id = $2 AND version > $3
 ORDER BY version
 LIMIT $4

-- name: stream_until --
-- $1 tenant_id, $2 stream_id, $3 recorded at or before
SELECT tenant_id, seq, stream_id, version, type, schema_version, data, metadata,
       actor_kind, actor_id, recorded_at, hash
  FROM events
 WHERE tenant_id = $1 AND stream_id = $2 AND recorded_at <= $3
 ORDER BY version

-- name: feed --
-- $1 tenant_id, $2 after seq, $3 types (NULL = all), $4 stream_id, $5 actor_id,
-- $6 recorded at or after, $7 recorded before, $8 limit
SELECT tenant_id, seq, stream_id, version, type, schema_version, data, metadata,
       actor_kind, actor_id, recorded_at, hash
  FROM events
 WHERE tenant_id = $1
   AND seq > $2
   AND ($3::text[] IS NULL OR type = ANY ($3::text[]))
   AND ($4::uuid IS NULL OR stream_id = $4::uuid)
   AND ($5::text IS NULL OR actor_id = $5::text)
   AND ($6::timestamptz IS NULL OR recorded_at >= $6::timestamptz)
   AND ($7::timestamptz IS NULL OR recorded_at < $7::timestamptz)
 ORDER BY seq
 LIMIT $8

-- name: export_range --
-- $1 tenant_id, $2 after seq, $3 up to seq, $4 limit
SELECT tenant_id, seq, stream_id, version, type, schema_version, data, metadata,
       actor_kind, actor_id, recorded_at, hash
  FROM events
 WHERE tenant_id = $1 AND seq > $2 AND seq <= $3
 ORDER BY seq
 LIMIT $4

-- name: hash_at --
-- $1 tenant_id, $2 seq
SELECT hash FROM events WHERE tenant_id = $1 AND seq = $2

-- name: data_key_take --
-- $1 tenant_id, $2 subject_id, $3 wrapped key to keep if the subject has none yet
-- In one round trip: the subject's key row held FOR SHARE (found), as data_key_hold
-- does, or, when it has none, the new key inserted (made; the new row is held by this
-- transaction until commit). Neither: another transaction inserted one meanwhile, and
-- has committed by now (data_key_hold then holds it). $4: the wrapping KEK's
-- fingerprint.
WITH held AS (
    SELECT wrapped, kek FROM data_keys WHERE tenant_id = $1 AND subject_id = $2 FOR SHARE),
made AS (
    INSERT INTO data_keys (tenant_id, subject_id, wrapped, kek)
    SELECT $1, $2, $3, $4 WHERE NOT EXISTS (SELECT 1 FROM held)
    ON CONFLICT (tenant_id, subject_id) DO NOTHING
    RETURNING wrapped)
SELECT EXISTS (SELECT 1 FROM held) AS found, (SELECT wrapped FROM held) AS wrapped,
       (SELECT kek FROM held) AS kek, EXISTS (SELECT 1 FROM made) AS made

-- name: data_key_new --
-- $1 tenant_id, $2 subject_id, $3 wrapped key, $4 the wrapping KEK's fingerprint
-- The key of a subject created in this transaction under a fresh id, which no one
-- can hold a key for: no ON CONFLICT, so if one existed all the same, the insert
-- fails the transaction rather than leave data sealed with a key never stored.
INSERT INTO data_keys (tenant_id, subject_id, wrapped, kek)
VALUES ($1, $2, $3, $4)

-- name: data_key_hold --
-- $1 tenant_id, $2 subject_id
-- Hold the subject's key row FOR SHARE until commit: an erasure (which updates the
-- row) waits for this append to commit and then erases it too, or comes first, and
-- this append finds the tombstone (wrapped NULL) and is refused.
SELECT wrapped, kek FROM data_keys WHERE tenant_id = $1 AND subject_id = $2 FOR SHARE

-- name: data_keys_read --
-- $1 tenant_id, $2 subject ids
SELECT subject_id, wrapped, kek FROM data_keys WHERE tenant_id = $1 AND subject_id = ANY($2)

-- name: data_key_erase --
-- $1 tenant_id, $2 subject_id
-- The tombstone: the key is gone for good; the row stays so no new key is made.
INSERT INTO data_keys (tenant_id, subject_id, wrapped, erased_at)
VALUES ($1, $2, NULL, now())
ON CONFLICT (tenant_id, subject_id) DO UPDATE SET wrapped = NULL, kek = NULL, erased_at = now()

-- name: data_keys_stale --
-- $1 tenant_id, $2 the current KEK's fingerprint, $3 batch size, $4 the last subject of
-- the previous batch (NULL: from the first)
-- Live keys not wrapped by the current KEK yet, locked for re-wrapping (an erasure
-- meanwhile makes a row a tombstone, which the recheck of FOR UPDATE then skips).
SELECT subject_id, wrapped, kek FROM data_keys
 WHERE tenant_id = $1 AND ($4::uuid IS NULL OR subject_id > $4)
   AND wrapped IS NOT NULL AND kek IS DISTINCT FROM $2
 ORDER BY subject_id
 LIMIT $3
   FOR UPDATE

-- name: data_keys_rewrap --
-- $1 tenant_id, $2 subject ids, $3 their keys wrapped anew, $4 the current KEK's fingerprint
UPDATE data_keys d SET wrapped = u.wrapped, kek = $4
  FROM unnest($2::uuid[], $3::bytea[]) AS u (subject_id, wrapped)
 WHERE d.tenant_id = $1 AND d.subject_id = u.subject_id AND d.wrapped IS NOT NULL

-- name: data_key_census --
SELECT kek, keys FROM data_key_census()

-- name: streams_stored --
-- $1 tenant_id, $2 stream ids
SELECT tenant_id, seq, stream_id, version, type, schema_version, data, metadata,
       actor_kind, actor_id, recorded_at, hash
  FROM events
 WHERE tenant_id = $1 AND stream_id = ANY($2)
 ORDER BY seq
