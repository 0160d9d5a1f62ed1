-- Moving a tenant between databases (handlers/tenant_move.py). Every statement runs
-- as the owner role, armed for the tenant, so row-level security still holds; table
-- names are filled in from the catalog (identifiers only, never values).

-- name: schema_version --
SELECT max(version) FROM schema_migrations

-- name: tenant --
-- $1 tenant_id
SELECT t.id, t.name, t.slug, t.created_at, h.seq, h.hash, h.paused_retry_after
  FROM tenants t JOIN tenant_heads h ON h.tenant_id = t.id
 WHERE t.id = $1

-- name: tenant_taken --
-- $1 tenant_id, $2 slug: a tenant that is there already, by id or by slug
SELECT id FROM tenants WHERE id = $1 OR slug = $2 LIMIT 1

-- name: pause --
-- $1 tenant_id, $2 seconds a refused write is told to wait (NULL: writes go on)
UPDATE tenant_heads SET paused_retry_after = $2 WHERE tenant_id = $1 RETURNING seq

-- name: tables --
-- Every tenant table of the schema (a tenant_id column), with the tables it refers to
-- and the columns an INSERT may name (not generated, not an identity always made).
SELECT c.relname::text AS name,
       coalesce((SELECT array_agg(DISTINCT r.relname::text)
                   FROM pg_constraint k JOIN pg_class r ON r.oid = k.confrelid
                  WHERE k.conrelid = c.oid AND k.contype = 'f' AND r.oid <> c.oid),
                '{}') AS refers_to,
       (SELECT array_agg(a.attname::text ORDER BY a.attnum)
          FROM pg_attribute a
         WHERE a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
           AND a.attgenerated = '' AND a.attidentity <> 'a') AS columns
  FROM pg_class c
  JOIN pg_namespace n ON n.oid = c.relnamespace AND n.nspname = 'public'
 WHERE c.relkind IN ('r', 'p') AND NOT c.relispartition
   AND EXISTS (SELECT 1 FROM pg_attribute a
                WHERE a.attrelid = c.oid AND a.attname = 'tenant_id' AND NOT a.attisdropped)
 ORDER BY c.relname

-- name: data_keys --
-- $1 tenant_id
SELECT subject_id, wrapped, kek, created_at, erased_at FROM data_keys WHERE tenant_id = $1
 ORDER BY subject_id

-- name: insert_tenant --
-- $1 id, $2 name, $3 slug, $4 created_at
INSERT INTO tenants (id, name, slug, created_at) VALUES ($1, $2, $3, $4)

-- name: insert_head --
-- $1 tenant_id, $2 paused_retry_after: seq 0 and the zero hash, as a new tenant's
INSERT INTO tenant_heads (tenant_id, paused_retry_after) VALUES ($1, $2)

-- name: arm_import --
-- Events go in as they were recorded (migration 0655): seq, actor, time and hash.
SELECT set_config('app.importing', 'on', true)

-- name: insert_events --
-- $1 the events' export lines, each line's UTF-8 bytes (hash in hex), in seq order;
-- tenant_id named as a value, checked by the chain check against the armed tenant.
-- Each line is parsed on its own: one jsonb of the whole batch took twice the time
-- (docs/performance.md, "Moving a tenant").
INSERT INTO events (tenant_id, seq, stream_id, version, type, schema_version, data,
                    metadata, actor_kind, actor_id, recorded_at, hash)
SELECT e.tenant_id, e.seq, e.stream_id, e.version, e.type, e.schema_version, e.data,
       e.metadata, e.actor_kind, e.actor_id, e.recorded_at, decode(e.hash, 'hex')
  FROM unnest($1::bytea[]) AS l(line)
 CROSS JOIN LATERAL jsonb_to_record(convert_from(l.line, 'UTF8')::jsonb) AS e (
       tenant_id uuid, seq bigint, stream_id uuid, version integer, type text,
       schema_version integer, data jsonb, metadata jsonb, actor_kind text,
       actor_id text, recorded_at timestamptz, hash text)
 ORDER BY e.seq

-- name: insert_data_keys --
-- $1 tenant_id, $2 subject ids, $3 wrapped keys (NULL: erased), $4 kek, $5 created_at,
-- $6 erased_at
INSERT INTO data_keys (tenant_id, subject_id, wrapped, kek, created_at, erased_at)
SELECT $1, s, w, CASE WHEN w IS NULL THEN NULL ELSE $4 END, c, e
  FROM unnest($2::uuid[], $3::bytea[], $5::timestamptz[], $6::timestamptz[]) AS k(s, w, c, e)

-- name: head --
-- $1 tenant_id
SELECT seq, hash FROM tenant_heads WHERE tenant_id = $1

-- name: blobs_elsewhere --
-- $1 tenant_id: stored files whose chunks are not file_chunks rows
SELECT id, storage, size FROM file_blobs
 WHERE tenant_id = $1 AND storage <> 'postgres' AND state = 'stored'
 ORDER BY id

-- name: insert_chunks --
-- $1 tenant_id, $2 blob ids, $3 chunk numbers, $4 sealed chunks
INSERT INTO file_chunks (tenant_id, blob_id, n, data)
SELECT $1, b, n, d FROM unnest($2::uuid[], $3::integer[], $4::bytea[]) AS c(b, n, d)

-- name: import_head --
-- $1 tenant_id, $2 seq and $3 hash of the last imported event: the head moves there
-- from where the import began (the trigger checked every link up to it)
UPDATE tenant_heads h SET seq = e.seq, hash = e.hash
  FROM events e
 WHERE h.tenant_id = $1 AND e.tenant_id = $1 AND e.seq = $2 AND e.hash = $3
   AND h.seq < $2
RETURNING h.seq
