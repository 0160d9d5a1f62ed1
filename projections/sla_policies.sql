-- Statements of the calendar and SLA policy read models (projections/sla_policies.py).

-- name: get_calendar --
-- $1 tenant_id, $2 calendar id
SELECT id, version, name, hours, created_at, updated_at
  FROM sla_calendars WHERE tenant_id = $1 AND id = $2

-- name: calendar_for_update --
-- $1 tenant_id, $2 calendar id
SELECT id, version, name, hours, created_at, updated_at
  FROM sla_calendars WHERE tenant_id = $1 AND id = $2 FOR UPDATE

-- name: count_calendars --
-- $1 tenant_id
SELECT count(*) FROM sla_calendars WHERE tenant_id = $1

-- name: put_calendar --
-- $1 tenant_id, $2 id, $3 name, $4 hours, $5 version, $6 created_at, $7 updated_at.
-- The current row, the version's hours kept for good beside it, and a new revision of
-- the tenant's policies (migration 0680), since the policies run on it.
WITH current AS (
    INSERT INTO sla_calendars (tenant_id, id, name, hours, version, created_at, updated_at)
    VALUES ($1, $2, $3, $4, $5, $6, $7)
    ON CONFLICT (tenant_id, id) DO UPDATE
       SET name = excluded.name, hours = excluded.hours, version = excluded.version,
           updated_at = excluded.updated_at
), kept AS (
    INSERT INTO sla_calendar_versions (tenant_id, calendar_id, version, hours)
    VALUES ($1, $2, $5, $4)
)
INSERT INTO sla_policy_revisions (tenant_id, revision)
VALUES ($1, nextval('sla_policy_revision'))
ON CONFLICT (tenant_id) DO UPDATE SET revision = excluded.revision

-- name: calendar_versions --
-- $1 tenant_id, $2 calendar ids, $3 versions (pairwise): the hours of each
SELECT v.calendar_id, v.version, v.hours
  FROM sla_calendar_versions v
  JOIN unnest($2::uuid[], $3::int[]) AS w (calendar_id, version)
    ON v.calendar_id = w.calendar_id AND v.version = w.version
 WHERE v.tenant_id = $1

-- name: list_calendars --
-- $1 tenant_id, $2 cursor created_at (null: first page), $3 cursor id, $4 limit
SELECT id, version, name, hours, created_at, updated_at
  FROM sla_calendars
 WHERE tenant_id = $1
   AND ($2::timestamptz IS NULL OR (created_at, id) > ($2::timestamptz, $3::uuid))
 ORDER BY created_at, id
 LIMIT $4

-- name: get_policy --
-- $1 tenant_id, $2 policy id
SELECT id, version, name, position, "default", conditions, targets, calendar_id,
       created_at, updated_at
  FROM sla_policies WHERE tenant_id = $1 AND id = $2

-- name: policy_for_update --
-- $1 tenant_id, $2 policy id
SELECT id, version, name, position, "default", conditions, targets, calendar_id,
       created_at, updated_at
  FROM sla_policies WHERE tenant_id = $1 AND id = $2 FOR UPDATE

-- name: lock_policies --
-- $1 tenant_id. Changes to the set (a default, the count) queue here, so what they
-- check holds until commit.
SELECT pg_advisory_xact_lock(hashtextextended('sla_policies:' || $1::uuid::text, 0))

-- name: all_policies --
-- $1 tenant_id. Every policy; the caller puts them in the order they are tried.
SELECT id, version, name, position, "default", conditions, targets, calendar_id,
       created_at, updated_at
  FROM sla_policies WHERE tenant_id = $1

-- name: has_policies --
-- $1 tenant_id
SELECT EXISTS (SELECT 1 FROM sla_policies WHERE tenant_id = $1)

-- name: policies_ask_organization --
-- $1 tenant_id: whether a policy has a condition on the requester's organization
SELECT EXISTS (SELECT 1 FROM sla_policies
                WHERE tenant_id = $1 AND conditions @> '[{"field": "organization_id"}]')

-- name: put_policy --
-- $1 tenant_id, $2 id, $3 name, $4 position, $5 default, $6 conditions, $7 targets,
-- $8 calendar_id, $9 version, $10 created_at, $11 updated_at.
-- The row, and a new revision of the tenant's policies (migration 0680).
WITH policy AS (
    INSERT INTO sla_policies (tenant_id, id, name, position, "default", conditions, targets,
                              calendar_id, version, created_at, updated_at)
    VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)
    ON CONFLICT (tenant_id, id) DO UPDATE
       SET name = excluded.name, position = excluded.position,
           conditions = excluded.conditions, targets = excluded.targets,
           calendar_id = excluded.calendar_id, version = excluded.version,
           updated_at = excluded.updated_at
)
INSERT INTO sla_policy_revisions (tenant_id, revision)
VALUES ($1, nextval('sla_policy_revision'))
ON CONFLICT (tenant_id) DO UPDATE SET revision = excluded.revision

-- name: list_policies --
-- $1 tenant_id, $2 cursor created_at (null: first page), $3 cursor id, $4 limit
SELECT id, version, name, position, "default", conditions, targets, calendar_id,
       created_at, updated_at
  FROM sla_policies
 WHERE tenant_id = $1
   AND ($2::timestamptz IS NULL OR (created_at, id) > ($2::timestamptz, $3::uuid))
 ORDER BY created_at, id
 LIMIT $4

-- name: current_calendars --
-- $1 tenant_id, $2 calendar ids: each one's current version and hours
SELECT id, version, hours FROM sla_calendars WHERE tenant_id = $1 AND id = ANY($2::uuid[])

-- name: delete_policy --
-- $1 tenant_id, $2 policy id. The row goes, and the tenant's policies get a new
-- revision (migration 0680), so no process decides on the deleted one again. Clocks
-- that ran on it keep what they recorded.
WITH gone AS (
    DELETE FROM sla_policies WHERE tenant_id = $1 AND id = $2
)
INSERT INTO sla_policy_revisions (tenant_id, revision)
VALUES ($1, nextval('sla_policy_revision'))
ON CONFLICT (tenant_id) DO UPDATE SET revision = excluded.revision

-- name: delete_calendar --
-- $1 tenant_id, $2 calendar id. The row goes; its versions' hours stay for good
-- (sla_calendar_versions), for the clocks that ran on them.
WITH gone AS (
    DELETE FROM sla_calendars WHERE tenant_id = $1 AND id = $2
)
INSERT INTO sla_policy_revisions (tenant_id, revision)
VALUES ($1, nextval('sla_policy_revision'))
ON CONFLICT (tenant_id) DO UPDATE SET revision = excluded.revision

-- name: policies_on_calendar --
-- $1 tenant_id, $2 calendar id: the policies that run on it, oldest first
SELECT id, name FROM sla_policies WHERE tenant_id = $1 AND calendar_id = $2
 ORDER BY created_at, id
