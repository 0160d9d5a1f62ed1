-- What importers made of their sources' records (migration 0695, handlers/zendesk_import.py).

-- name: imported --
-- $1 tenant_id, $2 source
-- Everything imported from the source so far: the importer's resume point.
SELECT kind, source_id, target_id
  FROM import_sources
 WHERE tenant_id = $1 AND source = $2

-- name: record_import --
-- $1 tenant_id, $2 source, $3 kind, $4 source_id, $5 target_id, $6 facts (jsonb)
-- In the transaction that created the record: the unique key makes a second import of
-- the same record fail that transaction, so it never commits twice. Returns the row
-- when it was written, none when the record was imported already (the marker kinds).
INSERT INTO import_sources (tenant_id, source, kind, source_id, target_id, facts)
VALUES ($1, $2, $3, $4, $5, $6)
ON CONFLICT DO NOTHING
RETURNING source_id

-- name: record_imports --
-- $1 tenant_id, $2 source, $3 kind, $4 source_ids, $5 target_ids, $6 facts (JSON texts)
-- ``record_import`` for a batch of records of one kind (handlers/zendesk_batch.py): the
-- rows written come back, so a record imported already shows as a row missing.
INSERT INTO import_sources (tenant_id, source, kind, source_id, target_id, facts)
SELECT $1, $2, $3, r.source_id, r.target_id, r.facts::jsonb
  FROM unnest($4::text[], $5::uuid[], $6::text[]) AS r(source_id, target_id, facts)
ON CONFLICT DO NOTHING
RETURNING source_id

-- name: imported_of --
-- $1 tenant_id, $2 source, $3 kind, $4 source_ids
-- Which of these records are imported already (a batch that another run overtook).
SELECT source_id, target_id
  FROM import_sources
 WHERE tenant_id = $1 AND source = $2 AND kind = $3 AND source_id = ANY($4::text[])
