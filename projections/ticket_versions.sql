-- Every version of every ticket, with the seqs it was valid between (migration 0611,
-- projections/ticket_versions.py): the desk as it stood at any seq.

-- name: insert_ticket_version --
-- $1 tenant_id, $2 id, $3 version, $4 state, $5 priority, $6 source, $7 assignee,
-- $8 tags, $9 group_id, $10 contact_id, $11 fields, $12 created_at, $13 updated_at,
-- $14 view (the API document, as text)
-- The organization is the contact's when the version was made; the seqs come from the
-- trigger on `events` when the version's event is appended.
INSERT INTO ticket_versions (tenant_id, id, version, state, priority, source, assignee, tags,
                             group_id, contact_id, organization_id, fields, created_at,
                             updated_at, view)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10,
        (SELECT c.organization_id FROM contacts c WHERE c.tenant_id = $1 AND c.id = $10),
        $11, $12, $13, $14::text::json)

-- name: insert_new_ticket_versions --
-- $1 tenant_id, then one array element per version: $2 id, $3 version, $4 state,
-- $5 priority, $6 source, $7 assignee, $8 tags (a JSON array's text each), $9 group_id,
-- $10 contact_id, $11 fields, $12 created_at, $13 updated_at, $14 view (text)
-- ``insert_ticket_version`` for a batch (projections/inline.py ``apply_new_tickets``):
-- one statement; the seqs come from the trigger on `events` as before.
INSERT INTO ticket_versions (tenant_id, id, version, state, priority, source, assignee, tags,
                             group_id, contact_id, organization_id, fields, created_at,
                             updated_at, view)
SELECT $1, v.id, v.version, v.state, v.priority, v.source, v.assignee,
       ARRAY(SELECT jsonb_array_elements_text(v.tags::jsonb)), v.group_id, v.contact_id,
       (SELECT c.organization_id FROM contacts c WHERE c.tenant_id = $1 AND c.id = v.contact_id),
       v.fields, v.created_at, v.updated_at, v.view::json
  FROM unnest($2::uuid[], $3::integer[], $4::text[], $5::text[], $6::text[], $7::uuid[],
              $8::text[], $9::uuid[], $10::uuid[], $11::jsonb[], $12::timestamptz[],
              $13::timestamptz[], $14::text[])
       AS v(id, version, state, priority, source, assignee, tags, group_id, contact_id,
            fields, created_at, updated_at, view)

-- name: seq_at --
-- $1 tenant_id, $2 instant
-- The last seq recorded at or before the instant (0: none). recorded_at follows seq:
-- the insert trigger stamps it under the tenant's head lock.
SELECT coalesce((SELECT seq FROM events WHERE tenant_id = $1 AND recorded_at <= $2
                  ORDER BY recorded_at DESC LIMIT 1), 0)

-- name: seq_instant --
-- $1 tenant_id, $2 seq
-- When the event at this seq was recorded, and the tenant's head.
SELECT (SELECT recorded_at FROM events WHERE tenant_id = $1 AND seq = $2) AS at,
       coalesce((SELECT seq FROM tenant_heads WHERE tenant_id = $1), 0) AS head

-- name: list_as_of --
-- $1 tenant_id, $2 cursor created_at, $3 cursor id, $4 limit, $5 the seq, then the
-- filters from $6 as list_tickets takes them (projections/reads.py TICKET_FILTERS).
-- The walk starts at the cursor or, when that is later, just after the newest
-- created_at of any ticket kept by $5 (created_max of the last first version: the
-- start key below is the lesser of the two), so the tickets opened since are never
-- visited; each ticket then has at most one version valid at $5, and the range is tested
-- on the index entries (the bounds are keys of ticket_versions_keyset, migration 0960,
-- which holds the stamped versions: `valid_from_seq <= $5` implies its predicate), so
-- only that version's row is read. The start is one row value, so that the index scan
-- begins there: with the bound as a condition of its own beside the cursor's, Postgres
-- began at the cursor and stepped over every newer entry (18 ms at a tenth of a
-- 20,000-ticket history).
-- The bound is read once (`bound`): written out twice, it was two InitPlans, each a
-- reference to ticket_versions with its own copy of the row-level security quals to
-- set up, which cost more than the walk itself (docs/performance.md, bench/as_of.py).
-- (A ticket id of all ones would be skipped at the bound; a v4 uuid never is one.)
WITH bound AS (
    SELECT o.created_max FROM ticket_versions o
     WHERE o.tenant_id = $1 AND o.created_max IS NOT NULL AND o.valid_from_seq <= $5
     ORDER BY o.valid_from_seq DESC LIMIT 1
)
SELECT id, version, created_at AS sort_key, view::text AS view, NULL::jsonb AS state_json
  FROM ticket_versions
 WHERE tenant_id = $1
   AND (created_at, id) < (
       least($2::timestamptz, (SELECT created_max FROM bound)),
       CASE WHEN $2::timestamptz <= (SELECT created_max FROM bound)
            THEN $3::uuid ELSE 'ffffffff-ffff-ffff-ffff-ffffffffffff'::uuid END)
   AND valid_from_seq <= $5 AND valid_to_seq > $5
   {filters}
 ORDER BY created_at DESC, id DESC
 LIMIT $4

-- name: backlog_as_of --
-- $1 tenant_id, $2 the seq, $3 the instant ages are measured at
-- Open work as analytics' backlog counts it, from the versions valid at the seq.
-- Ages compare created_at with the instant moved back, never subtract the two: the
-- driver sends the calendar's last instant as infinity, which cannot be subtracted.
SELECT state, priority,
       CASE WHEN created_at > $3::timestamptz - interval '1 day' THEN 'lt_1d'
            WHEN created_at > $3::timestamptz - interval '3 days' THEN '1d_3d'
            WHEN created_at > $3::timestamptz - interval '7 days' THEN '3d_7d'
            ELSE 'gte_7d' END AS age,
       count(*) AS tickets
  FROM ticket_versions
 WHERE tenant_id = $1 AND valid_from_seq <= $2 AND valid_to_seq > $2
   AND state IN ('open', 'pending', 'on_hold')
 GROUP BY 1, 2, 3
 ORDER BY 1, 2, 3

-- name: versions_to_redact --
-- $1 tenant_id, $2 ticket id
-- Its view document and, apart, its fields column (which may hold a key the document
-- does not show).
SELECT version, view::text AS view, fields FROM ticket_versions WHERE tenant_id = $1 AND id = $2

-- name: redact_version --
-- $1 tenant_id, $2 ticket id, $3 version, $4 the document as redacted (text), $5 fields
UPDATE ticket_versions SET view = $4::text::json, fields = $5
 WHERE tenant_id = $1 AND id = $2 AND version = $3

-- name: versions_as_their_tickets --
-- $1 tenant_id, $2 the top-level keys of the ticket document
-- A kept current version whose document lacks a key the document has now (one kept by
-- migration 0611 from a row `helpdesk migrate` renders anew after) takes its ticket's.
UPDATE ticket_versions v SET view = t.view
  FROM tickets t
 WHERE v.tenant_id = $1 AND t.tenant_id = $1 AND t.id = v.id AND t.version = v.version
   AND NOT (v.view::jsonb ?& $2::text[]) AND t.view::jsonb ?& $2::text[]
