-- Statements of the macro read model (projections/macros.py).

-- name: get_macro --
-- $1 tenant_id, $2 macro id, $3 the reading agent (NULL: a key of no agent): a personal
-- macro of another agent is not there for them
SELECT id, version, name, owner_id, text, visibility, actions, created_at, updated_at
  FROM macros
 WHERE tenant_id = $1 AND id = $2 AND (owner_id IS NULL OR owner_id = $3::uuid)

-- name: insert_macro --
-- $1 tenant_id, $2 id, $3 owner_id, $4 name, $5 text, $6 visibility, $7 actions,
-- $8 version, $9 created_at, $10 updated_at
INSERT INTO macros (tenant_id, id, owner_id, name, text, visibility, actions, version,
                    created_at, updated_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)

-- name: list_macros --
-- $1 tenant_id, $2 the reading agent, $3 cursor created_at (null: first page),
-- $4 cursor id, $5 limit: the shared ones and the reader's own
SELECT id, version, name, owner_id, text, visibility, actions, created_at, updated_at
  FROM macros
 WHERE tenant_id = $1 AND (owner_id IS NULL OR owner_id = $2::uuid)
   AND ($3::timestamptz IS NULL OR (created_at, id) > ($3::timestamptz, $4::uuid))
 ORDER BY created_at, id
 LIMIT $5

-- name: macro_for_update --
-- $1 tenant_id, $2 macro id: whoever owns it (the handler says who may change it),
-- locked until commit
SELECT id, version, name, owner_id, text, visibility, actions, created_at, updated_at
  FROM macros
 WHERE tenant_id = $1 AND id = $2
   FOR UPDATE

-- name: update_macro --
-- $1 tenant_id, $2 id, $3 name, $4 text, $5 visibility, $6 actions, $7 version,
-- $8 updated_at
UPDATE macros
   SET name = $3, text = $4, visibility = $5, actions = $6, version = $7, updated_at = $8
 WHERE tenant_id = $1 AND id = $2

-- name: delete_macro --
-- $1 tenant_id, $2 id
DELETE FROM macros WHERE tenant_id = $1 AND id = $2
