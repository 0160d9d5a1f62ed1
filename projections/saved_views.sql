-- Statements of the saved view read model (projections/saved_views.py).

-- name: get_view --
-- $1 tenant_id, $2 view id, $3 the reading agent: another agent's personal view is not
-- there for them
SELECT id, version, name, owner_id, filters, created_at, updated_at
  FROM saved_views
 WHERE tenant_id = $1 AND id = $2 AND (owner_id IS NULL OR owner_id = $3::uuid)

-- name: insert_view --
-- $1 tenant_id, $2 id, $3 owner_id, $4 name, $5 filters, $6 version, $7 created_at,
-- $8 updated_at
INSERT INTO saved_views (tenant_id, id, owner_id, name, filters, version, created_at,
                         updated_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8)

-- name: list_views --
-- $1 tenant_id, $2 the reading agent, $3 cursor created_at (null: first page),
-- $4 cursor id, $5 limit: the shared ones and the reader's own
SELECT id, version, name, owner_id, filters, created_at, updated_at
  FROM saved_views
 WHERE tenant_id = $1 AND (owner_id IS NULL OR owner_id = $2::uuid)
   AND ($3::timestamptz IS NULL OR (created_at, id) > ($3::timestamptz, $4::uuid))
 ORDER BY created_at, id
 LIMIT $5

-- name: view_for_update --
-- $1 tenant_id, $2 view id: whoever owns it (the handler says who may change it),
-- locked until commit
SELECT id, version, name, owner_id, filters, created_at, updated_at
  FROM saved_views
 WHERE tenant_id = $1 AND id = $2
   FOR UPDATE

-- name: update_view --
-- $1 tenant_id, $2 id, $3 name, $4 filters, $5 version, $6 updated_at
UPDATE saved_views
   SET name = $3, filters = $4, version = $5, updated_at = $6
 WHERE tenant_id = $1 AND id = $2

-- name: delete_view --
-- $1 tenant_id, $2 id
DELETE FROM saved_views WHERE tenant_id = $1 AND id = $2
