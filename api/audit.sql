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
