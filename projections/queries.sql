-- name: tenant_settings --
-- $1 tenant_id
SELECT settings, version FROM tenant_settings WHERE tenant_id = $1

-- name: ticket_state --
-- $1 tenant_id, $2 ticket_id
SELECT version, state_json FROM tickets WHERE tenant_id = $1 AND id = $2

-- name: insert_ticket --
-- $1 tenant_id, $2 id, $3 version, $4 state, $5 priority, $6 source, $7 assignee,
-- $8 tags, $9 subject, $10 requester, $11 follow_up_of, $12 clocks, $13 state_json,
-- $14 created_at, $15 updated_at, $16 view (the API document, as text), $17 contact_id,
-- $18 sla_due (the next deadline of a running clock; 'infinity' for none)
-- The organization is the contact's (projections/people.py keeps it so).
INSERT INTO tickets (tenant_id, id, version, state, priority, source, assignee, tags, subject,
                     requester, follow_up_of, clocks, state_json, created_at, updated_at, view,
                     contact_id, organization_id, sla_due)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16::text::json,
        $17, (SELECT c.organization_id FROM contacts c WHERE c.tenant_id = $1 AND c.id = $17),
        $18)

-- name: update_ticket --
-- $1 tenant_id, $2 id, $3 version, $4 state, $5 priority, $6 assignee, $7 tags,
-- $8 clocks, $9 state_json, $10 updated_at, $11 previous version, $12 view (as text),
-- $13 requester, $14 contact_id, $15 sla_due
UPDATE tickets
   SET version = $3, state = $4, priority = $5, assignee = $6, tags = $7, clocks = $8,
       state_json = $9, updated_at = $10, view = $12::text::json, requester = $13,
       contact_id = $14, sla_due = $15,
       organization_id = CASE WHEN contact_id IS NOT DISTINCT FROM $14 THEN organization_id
                              ELSE (SELECT c.organization_id FROM contacts c
                                     WHERE c.tenant_id = $1 AND c.id = $14) END
 WHERE tenant_id = $1 AND id = $2 AND version = $11

-- name: ticket_thread --
-- $1 tenant_id, $2 ticket_id: the tickets whose messages its thread lists, itself first
-- and then those merged into it (no row: no such ticket)
SELECT array_prepend(id, ARRAY(SELECT jsonb_array_elements_text(
           coalesce(state_json->'merged_from', '[]'))::uuid)) AS ids
  FROM tickets WHERE tenant_id = $1 AND id = $2

-- name: ticket_view --
-- $1 tenant_id, $2 ticket_id
-- The stored document as text: passed through as it is, never decoded.
SELECT id, version, created_at AS sort_key, view::text AS view,
       CASE WHEN view IS NULL THEN state_json END AS state_json
  FROM tickets WHERE tenant_id = $1 AND id = $2

-- name: set_ticket_contacts --
-- $1 tenant_id, $2 and $3 the (ticket, role) pairs whose rows are replaced, $4, $5, $6
-- the rows wanted (ticket, contact, role) in place of theirs
-- Who reads a ticket in the portal (migration 0900): rows no longer wanted go, the new
-- ones come, those kept stay untouched.
WITH wanted AS (
    SELECT * FROM unnest($4::uuid[], $5::uuid[], $6::text[]) AS w(ticket_id, contact_id, role)
), dropped AS (
    DELETE FROM ticket_contacts c
     USING unnest($2::uuid[], $3::text[]) AS s(ticket_id, role)
     WHERE c.tenant_id = $1 AND c.ticket_id = s.ticket_id AND c.role = s.role
       AND (c.ticket_id, c.contact_id, c.role) NOT IN (SELECT * FROM wanted)
)
INSERT INTO ticket_contacts (tenant_id, ticket_id, contact_id, role)
SELECT $1, ticket_id, contact_id, role FROM wanted
ON CONFLICT DO NOTHING

-- name: hold_merged --
-- $1 tenant_id, $2 the merge's target ticket, $3 the tickets merged into it, $4 at
-- The widget sessions that hold the target hold the tickets merged into it too: its
-- thread lists their messages, which the widget's scope (migration 0470) reads of the
-- tickets a session holds.
INSERT INTO widget_tickets (tenant_id, session_id, ticket_id, created_at)
SELECT w.tenant_id, w.session_id, m.id, $4
  FROM widget_tickets w, unnest($3::uuid[]) AS m(id)
 WHERE w.tenant_id = $1 AND w.ticket_id = $2
ON CONFLICT DO NOTHING

-- name: insert_message --
-- $1 tenant_id, $2 id, $3 ticket_id, $4 version, $5 visibility, $6 author_kind,
-- $7 author_id, $8 body, $9 created_at, $10 attachments as JSON text (NULL: none; text
-- so a deferred write renders it as one literal, eventstore/literal.py)
INSERT INTO messages (tenant_id, id, ticket_id, version, visibility, author_kind, author_id,
                      body, created_at, attachments)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10::text::jsonb)

-- name: move_messages --
-- $1 tenant_id, $2 message ids, $3 the ticket they move to (a split, TicketSplitFrom)
UPDATE messages SET ticket_id = $3 WHERE tenant_id = $1 AND id = ANY($2::uuid[])

-- name: active_agent --
-- $1 tenant_id, $2 agent_id
SELECT EXISTS (SELECT 1 FROM agents WHERE tenant_id = $1 AND id = $2 AND active)

-- name: whoami --
-- $1 tenant_id, $2 api key id, $3 agent id (null: the key acts as no agent)
-- One round trip for the names a caller is shown of itself: its tenant, its key and
-- the agent it acts as (row-level security: only the caller's own tenant).
SELECT t.name AS tenant_name, k.name AS key_name, a.name AS agent_name,
       a.email AS agent_email
  FROM tenants t
  LEFT JOIN api_keys k ON k.tenant_id = $1 AND k.id = $2
  LEFT JOIN agents a ON a.tenant_id = $1 AND a.id = $3
 WHERE t.id = $1

-- name: list_tickets --
-- $1 tenant_id, $2 cursor created_at, $3 cursor id, $4 limit, then one parameter per
-- filter in use, from $5 on, whose conditions take the place of the marker in braces
-- below (projections/reads.py TICKET_FILTERS), so each combination of filters is a statement
-- of its own. Why not one statement with `$n IS NULL OR ...` per filter: its generic
-- plan, which Postgres adopts after a few runs, estimated one matching row and read
-- every ticket of the tenant through a bitmap scan before sorting (18 ms at 3,000
-- tickets, growing with the tenant); this way the plan walks the keyset index
-- backwards from the cursor and stops at the limit (0.2 ms), at any depth.
-- Newest first; the first page passes ('infinity', max uuid) as its cursor. The
-- document comes as text, passed through.
SELECT id, version, created_at AS sort_key, view::text AS view,
       CASE WHEN view IS NULL THEN state_json END AS state_json
  FROM tickets
 WHERE tenant_id = $1
   AND (created_at, id) < ($2::timestamptz, $3::uuid)
   {filters}
 ORDER BY created_at DESC, id DESC
 LIMIT $4

-- name: list_tickets_by_sla_due --
-- $1 tenant_id, $2 cursor sla_due, $3 cursor id, $4 limit, then the filters as in
-- list_tickets. The next deadline soonest first (tickets_sla_due, tickets with no
-- running clock at 'infinity', last); the first page passes ('-infinity', nil uuid).
SELECT id, version, sla_due AS sort_key, view::text AS view,
       CASE WHEN view IS NULL THEN state_json END AS state_json
  FROM tickets
 WHERE tenant_id = $1
   AND (sla_due, id) > ($2::timestamptz, $3::uuid)
   {filters}
 ORDER BY sla_due, id
 LIMIT $4

-- name: list_messages --
-- $1 tenant_id, $2 ticket_id, $3 cursor created_at, $4 cursor id, $5 limit
-- Oldest first; the first page passes ('-infinity', nil uuid).
SELECT id, ticket_id, version, visibility, author_kind, author_id, body, created_at,
       attachments
  FROM messages
 WHERE tenant_id = $1 AND ticket_id = $2
   AND (created_at, id) > ($3::timestamptz, $4::uuid)
 ORDER BY created_at, id
 LIMIT $5

-- name: list_thread_messages --
-- $1 tenant_id, $2 ticket ids (a ticket and those merged into it), $3 cursor created_at,
-- $4 cursor id, $5 limit: list_messages of a merged thread, each message as written on
-- its own ticket
SELECT id, ticket_id, version, visibility, author_kind, author_id, body, created_at,
       attachments
  FROM messages
 WHERE tenant_id = $1 AND ticket_id = ANY($2::uuid[])
   AND (created_at, id) > ($3::timestamptz, $4::uuid)
 ORDER BY created_at, id
 LIMIT $5

-- name: arm_worker --
-- (no arguments) cross-tenant access to checkpoints, heads and tenants, this transaction only
SELECT set_config('app.worker', 'on', true)

-- name: arm_tenant --
-- $1 tenant_id. Drops the worker setting: from here on the transaction works as one
-- tenant only, with no actor (projections append nothing).
-- synchronous_commit off: a crash may lose the last batches' commits, but rows and
-- checkpoint are lost together and simply applied again, so no flush is worth waiting for.
SELECT set_config('app.worker', '', true),
       set_config('app.tenant_id', $1::text, true),
       set_config('app.actor_kind', '', true),
       set_config('app.actor_id', '', true),
       set_config('synchronous_commit', 'off', true)

-- name: ensure_checkpoints --
-- $1 projection names; worker-armed. Creates the missing (projection, tenant) rows.
INSERT INTO projection_checkpoints (projection, tenant_id)
SELECT p.name, t.id
  FROM tenants t CROSS JOIN unnest($1::text[]) AS p(name)
 WHERE NOT EXISTS (SELECT 1 FROM projection_checkpoints c
                    WHERE c.projection = p.name AND c.tenant_id = t.id)
ON CONFLICT DO NOTHING

-- name: claim --
-- $1 projection names, $2 tenant (NULL = any); worker-armed.
-- SKIP LOCKED: a checkpoint another worker is applying is simply not offered, so
-- any number of workers share the work and one (projection, tenant) is never
-- processed twice at once. The lock is held until this transaction commits.
SELECT c.projection, c.tenant_id, c.last_seq, c.rebuilding, h.seq AS head
  FROM projection_checkpoints c
  JOIN tenant_heads h ON h.tenant_id = c.tenant_id
 WHERE c.projection = ANY($1::text[])
   AND ($2::uuid IS NULL OR c.tenant_id = $2::uuid)
   AND c.last_seq < h.seq
 ORDER BY c.updated_at
 LIMIT 1
   FOR UPDATE OF c SKIP LOCKED

-- name: read_events --
-- $1 tenant_id, $2 after_seq, $3 limit; tenant-armed
SELECT seq, stream_id, version, type, schema_version, data, actor_kind, actor_id
  FROM events
 WHERE tenant_id = $1 AND seq > $2
 ORDER BY seq
 LIMIT $3

-- name: advance --
-- $1 projection, $2 tenant_id, $3 expected last_seq, $4 new last_seq, $5 tenant head
-- Compare-and-set: moves only from the value this batch started at.
UPDATE projection_checkpoints
   SET last_seq = $4::bigint,
       rebuilding = rebuilding AND $4::bigint < $5::bigint,
       updated_at = clock_timestamp()
 WHERE projection = $1 AND tenant_id = $2 AND last_seq = $3::bigint
RETURNING last_seq

-- name: reset --
-- $1 projection, $2 tenant_id; tenant-armed. Taken first in a rebuild so a batch in
-- flight commits before the rows are deleted.
UPDATE projection_checkpoints
   SET last_seq = 0,
       rebuilding = (SELECT h.seq > 0 FROM tenant_heads h WHERE h.tenant_id = $2),
       updated_at = clock_timestamp()
 WHERE projection = $1 AND tenant_id = $2
RETURNING last_seq

-- name: checkpoint --
-- $1 projection, $2 tenant_id; tenant-armed
SELECT c.last_seq, c.rebuilding, h.seq AS head
  FROM tenant_heads h
  LEFT JOIN projection_checkpoints c ON c.tenant_id = h.tenant_id AND c.projection = $1
 WHERE h.tenant_id = $2

-- name: status --
-- (no arguments) worker-armed
SELECT c.projection, c.tenant_id, t.name AS tenant_name, c.last_seq, h.seq AS head,
       c.rebuilding, c.updated_at
  FROM projection_checkpoints c
  JOIN tenant_heads h ON h.tenant_id = c.tenant_id
  JOIN tenants t ON t.id = c.tenant_id
 ORDER BY c.projection, t.name, c.tenant_id

-- name: heads --
-- (no arguments) worker-armed: every tenant's head seq
SELECT tenant_id, seq FROM tenant_heads

-- name: tenant_ids --
-- (no arguments) worker-armed
SELECT id FROM tenants ORDER BY id

-- name: business_hours_history --
-- $1 tenant_id, $2 through seq; tenant-armed. The business hours each settings change
-- recorded, in seq order (events_tenant_type_seq): what analytics counts business time
-- on, so that a later change moves no past figure.
SELECT seq, data -> 'settings' -> 'business_hours' AS hours
  FROM events
 WHERE tenant_id = $1 AND type = 'SettingsChanged' AND seq <= $2
 ORDER BY seq

-- name: first_reply_bases --
-- $1 tenant_id, $2 ticket ids: each ticket's opening (or split) and retargets, in seq order, with
-- the policy and calendar its first-reply clock was put on (null: before policies).
SELECT stream_id, seq, type, data -> 'clocks' -> 'first_response' -> 'basis' AS basis
  FROM events
 WHERE tenant_id = $1 AND stream_id = ANY($2::uuid[])
   AND type IN ('TicketOpened', 'TicketSplitFrom', 'SlaRetargeted')
 ORDER BY stream_id, seq

-- name: imported_measures --
-- $1 tenant_id, $2 ticket ids: what the source of an imported ticket recorded of its
-- first reply and resolution (docs/import.md), from its opening event's metadata.
SELECT stream_id, metadata -> 'import' -> 'recorded' AS recorded
  FROM events
 WHERE tenant_id = $1 AND stream_id = ANY($2::uuid[]) AND type = 'TicketOpened'
   AND actor_kind = 'import'

-- name: load_tickets --
-- $1 tenant_id, $2 ticket ids
SELECT * FROM analytics_tickets WHERE tenant_id = $1 AND ticket_id = ANY($2::uuid[])

-- name: write_batch --
-- $1 tenant_id; $2..$33 analytics_tickets column arrays (ticket_id .. last_seq, then
-- staff_notes .. agent_work_ms: projections.analytics.TicketRow's order);
-- $34..$40 daily (day, priority, source, created, solved, reopened, breached);
-- $41..$45 agent daily (day, agent_id, assigned, replies, solved).
-- One statement for the three tables: a batch costs one round trip to write. Ticket
-- rows are overwritten whole; counters are added to what earlier batches wrote.
WITH tickets AS (
    INSERT INTO analytics_tickets (
        tenant_id, ticket_id, priority, source, state, assignee, created_at, state_since,
        first_reply_at, first_reply_ms, first_reply_business_ms, solved_at, solves,
        resolution_ms, open_ms, resolution_open_ms, reopens, public_agent_replies,
        breaches_first_response, breaches_next_reply, breaches_resolution, last_seq,
        staff_notes, requester_wait_measured, requester_wait_missed, requester_wait_ms,
        periodic_updates, periodic_updates_met, periodic_update_due_at, rating,
        agent_work_measured, agent_work_missed, agent_work_ms)
    SELECT $1::uuid, * FROM unnest(
        $2::uuid[], $3::text[], $4::text[], $5::text[], $6::text[], $7::timestamptz[],
        $8::timestamptz[], $9::timestamptz[], $10::bigint[], $11::bigint[],
        $12::timestamptz[], $13::int[], $14::bigint[], $15::bigint[], $16::bigint[],
        $17::int[], $18::int[], $19::int[], $20::int[], $21::int[], $22::bigint[],
        $23::int[], $24::boolean[], $25::boolean[], $26::bigint[], $27::int[], $28::int[],
        $29::timestamptz[], $30::text[], $31::boolean[], $32::boolean[], $33::bigint[])
    ON CONFLICT (tenant_id, ticket_id) DO UPDATE SET
        priority = excluded.priority, source = excluded.source, state = excluded.state,
        assignee = excluded.assignee, created_at = excluded.created_at,
        state_since = excluded.state_since, first_reply_at = excluded.first_reply_at,
        first_reply_ms = excluded.first_reply_ms,
        first_reply_business_ms = excluded.first_reply_business_ms,
        solved_at = excluded.solved_at, solves = excluded.solves,
        resolution_ms = excluded.resolution_ms, open_ms = excluded.open_ms,
        resolution_open_ms = excluded.resolution_open_ms, reopens = excluded.reopens,
        public_agent_replies = excluded.public_agent_replies,
        breaches_first_response = excluded.breaches_first_response,
        breaches_next_reply = excluded.breaches_next_reply,
        breaches_resolution = excluded.breaches_resolution, last_seq = excluded.last_seq,
        staff_notes = excluded.staff_notes,
        requester_wait_measured = excluded.requester_wait_measured,
        requester_wait_missed = excluded.requester_wait_missed,
        requester_wait_ms = excluded.requester_wait_ms,
        periodic_updates = excluded.periodic_updates,
        periodic_updates_met = excluded.periodic_updates_met,
        periodic_update_due_at = excluded.periodic_update_due_at,
        rating = excluded.rating,
        agent_work_measured = excluded.agent_work_measured,
        agent_work_missed = excluded.agent_work_missed,
        agent_work_ms = excluded.agent_work_ms
    RETURNING 1
), daily AS (
    INSERT INTO analytics_daily AS d
        (tenant_id, day, priority, source, created, solved, reopened, breached)
    SELECT $1::uuid, * FROM unnest($34::date[], $35::text[], $36::text[], $37::int[],
                                   $38::int[], $39::int[], $40::int[])
    ON CONFLICT (tenant_id, day, priority, source) DO UPDATE SET
        created = d.created + excluded.created, solved = d.solved + excluded.solved,
        reopened = d.reopened + excluded.reopened, breached = d.breached + excluded.breached
    RETURNING 1
), agents AS (
    INSERT INTO analytics_agent_daily AS a (tenant_id, day, agent_id, assigned, replies, solved)
    SELECT $1::uuid, * FROM unnest($41::date[], $42::text[], $43::int[], $44::int[],
                                   $45::int[])
    ON CONFLICT (tenant_id, day, agent_id) DO UPDATE SET
        assigned = a.assigned + excluded.assigned, replies = a.replies + excluded.replies,
        solved = a.solved + excluded.solved
    RETURNING 1
)
SELECT (SELECT count(*) FROM tickets) + (SELECT count(*) FROM daily)
       + (SELECT count(*) FROM agents)

-- name: summary --
-- $1 tenant_id, $2 from (inclusive), $3 to (exclusive), $4 group:
-- priority|source|assignee|group|organization|day|field|all, $5 the field's key (group
-- field; else null)
-- Percentiles are percentile_disc (nearest rank): always a value some ticket had.
-- A ticket's group is the one it is in now, and its organization its contact's now,
-- read from the inline tickets row (the subquery runs only for that grouping: CASE
-- evaluates the branch it takes).
-- By field, a ticket counts under the value it holds now, as it does under its
-- priority now; a multiselect under each option it holds, no value under 'none'. The
-- lateral's filter on $4 is a one-time filter: other groups never expand a row.
-- A group, organization or assignee key comes with its name as it is now (null for
-- 'none' and for other groupings), read here so that a role which may not list
-- groups, organizations or agents (an analyst) still sees names.
WITH t AS (
    SELECT CASE $4::text
               WHEN 'priority' THEN priority
               WHEN 'source' THEN source
               WHEN 'assignee' THEN coalesce(assignee, 'none')
               WHEN 'group' THEN coalesce((SELECT g.group_id::text FROM tickets g
                                            WHERE g.tenant_id = $1 AND g.id = a.ticket_id),
                                          'none')
               WHEN 'day' THEN to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD')
               WHEN 'field' THEN coalesce(fv.value, 'none')
               WHEN 'organization' THEN coalesce(
                   (SELECT k.organization_id::text FROM tickets k
                     WHERE k.tenant_id = $1 AND k.id = a.ticket_id), 'none')
               ELSE 'all'
           END AS key,
           a.*
      FROM analytics_tickets a
      LEFT JOIN LATERAL (
          SELECT jsonb_array_elements_text(a.fields -> $5::text) AS value
           WHERE $4::text = 'field' AND jsonb_typeof(a.fields -> $5::text) = 'array'
          UNION ALL
          SELECT a.fields ->> $5::text
           WHERE $4::text = 'field' AND jsonb_typeof(a.fields -> $5::text) <> 'array'
      ) fv ON true
     WHERE tenant_id = $1 AND created_at >= $2 AND created_at < $3
)
SELECT key,
       CASE $4::text
           WHEN 'group' THEN (SELECT g.name FROM groups g
                               WHERE g.tenant_id = $1 AND g.id = nullif(key, 'none')::uuid)
           WHEN 'organization' THEN (SELECT o.name FROM organizations o
                                      WHERE o.tenant_id = $1
                                        AND o.id = nullif(key, 'none')::uuid)
           WHEN 'assignee' THEN (SELECT n.name FROM agents n
                                  WHERE n.tenant_id = $1 AND n.id::text = key)
       END AS name,
       count(*) AS tickets,
       count(resolution_ms) AS solved,
       percentile_disc(0.5) WITHIN GROUP (ORDER BY first_reply_ms) AS first_reply_p50,
       percentile_disc(0.9) WITHIN GROUP (ORDER BY first_reply_ms) AS first_reply_p90,
       percentile_disc(0.5) WITHIN GROUP (ORDER BY first_reply_business_ms) AS first_reply_business_p50,
       percentile_disc(0.9) WITHIN GROUP (ORDER BY first_reply_business_ms) AS first_reply_business_p90,
       percentile_disc(0.5) WITHIN GROUP (ORDER BY resolution_ms) AS resolution_p50,
       percentile_disc(0.9) WITHIN GROUP (ORDER BY resolution_ms) AS resolution_p90,
       percentile_disc(0.5) WITHIN GROUP (ORDER BY resolution_open_ms) AS resolution_open_p50,
       percentile_disc(0.9) WITHIN GROUP (ORDER BY resolution_open_ms) AS resolution_open_p90,
       count(*) FILTER (WHERE breaches_first_response = 0) AS met_first_response,
       count(*) FILTER (WHERE breaches_next_reply = 0) AS met_next_reply,
       count(*) FILTER (WHERE breaches_resolution = 0) AS met_resolution,
       count(*) FILTER (WHERE solves > 0) AS ever_solved,
       count(*) FILTER (WHERE solves > 0 AND reopens > 0) AS reopened,
       count(*) FILTER (WHERE resolution_ms IS NOT NULL AND public_agent_replies = 1) AS one_touch,
       -- Deflected: solved or closed (closing keeps resolution_ms) with no public
       -- message and no note by staff. A row not yet counted (staff_notes null) is not.
       count(*) FILTER (WHERE resolution_ms IS NOT NULL AND public_agent_replies = 0
                          AND staff_notes = 0) AS deflected,
       percentile_disc(0.5) WITHIN GROUP (ORDER BY requester_wait_ms) AS requester_wait_p50,
       percentile_disc(0.9) WITHIN GROUP (ORDER BY requester_wait_ms) AS requester_wait_p90,
       count(*) FILTER (WHERE requester_wait_measured) AS measured_requester_wait,
       count(*) FILTER (WHERE requester_wait_measured AND NOT requester_wait_missed)
           AS met_requester_wait,
       sum(periodic_updates)::int AS periodic_updates,
       sum(periodic_updates_met)::int AS periodic_updates_met,
       -- Satisfaction: the latest rating of the solved (or closed) tickets.
       count(*) FILTER (WHERE resolution_ms IS NOT NULL AND rating IS NOT NULL) AS rated,
       count(*) FILTER (WHERE resolution_ms IS NOT NULL AND rating = 'good') AS rated_good,
       percentile_disc(0.5) WITHIN GROUP (ORDER BY agent_work_ms) AS agent_work_p50,
       percentile_disc(0.9) WITHIN GROUP (ORDER BY agent_work_ms) AS agent_work_p90,
       count(*) FILTER (WHERE agent_work_measured) AS measured_agent_work,
       count(*) FILTER (WHERE agent_work_measured AND NOT agent_work_missed)
           AS met_agent_work
  FROM t
 GROUP BY key
 ORDER BY key

-- name: agent_names --
-- $1 tenant_id, $2 agent ids as text (assignee keys of the summary cells)
SELECT id::text, name FROM agents WHERE tenant_id = $1 AND id::text = ANY($2::text[])

-- name: volume --
-- $1 tenant_id, $2 from day, $3 to day (inclusive)
SELECT day, priority, source, created, solved, reopened, breached
  FROM analytics_daily
 WHERE tenant_id = $1 AND day BETWEEN $2 AND $3
 ORDER BY day, priority, source

-- name: volume_by_field --
-- $1 tenant_id, $2 from day, $3 to day (inclusive), $4 field key
SELECT day, value, created, solved, reopened, breached
  FROM analytics_field_daily
 WHERE tenant_id = $1 AND field_key = $4 AND day BETWEEN $2 AND $3
 ORDER BY day, value

-- name: backlog --
-- $1 tenant_id, $2 now (ages are measured from the ticket's creation)
SELECT state, priority,
       CASE WHEN $2 - created_at < interval '1 day' THEN 'lt_1d'
            WHEN $2 - created_at < interval '3 days' THEN '1d_3d'
            WHEN $2 - created_at < interval '7 days' THEN '3d_7d'
            ELSE 'gte_7d' END AS age,
       count(*) AS tickets
  FROM analytics_tickets
 WHERE tenant_id = $1 AND state IN ('open', 'pending', 'on_hold')
 GROUP BY 1, 2, 3
 ORDER BY 1, 2, 3

-- name: agents --
-- $1 tenant_id, $2 from day, $3 to day (inclusive), $4 group id (null: everyone): only
-- the group's members as it is now
-- Who each recorded author is: an agent (a person), an API key acting as itself (an
-- admin key without an agent), or neither (an id no API call writes). Ids are
-- compared as text: the projection keeps authors as recorded, and not every
-- recorded id need be a uuid.
SELECT w.id,
       CASE WHEN a.id IS NOT NULL THEN 'agent'
            WHEN k.id IS NOT NULL THEN 'api_key'
            ELSE 'unknown' END AS kind,
       coalesce(a.name, k.name) AS name,
       w.assigned, w.replies, w.solved
  FROM (SELECT agent_id AS id, sum(assigned)::int AS assigned,
               sum(replies)::int AS replies, sum(solved)::int AS solved
          FROM analytics_agent_daily
         WHERE tenant_id = $1 AND day BETWEEN $2 AND $3
           AND ($4::uuid IS NULL OR agent_id IN (
                   SELECT m::text FROM groups, unnest(members) AS m
                    WHERE groups.tenant_id = $1 AND groups.id = $4::uuid))
         GROUP BY agent_id) AS w
  LEFT JOIN agents a ON a.tenant_id = $1 AND a.id::text = w.id
  LEFT JOIN api_keys k ON k.tenant_id = $1 AND k.id::text = w.id
 ORDER BY kind, name, w.id

-- name: defer --
-- $1 projection, $2 tenant_id; worker-armed. A batch that failed goes to the back of
-- the claim order, so one unreadable event cannot starve every other tenant.
UPDATE projection_checkpoints
   SET updated_at = clock_timestamp()
 WHERE projection = $1 AND tenant_id = $2

-- name: lag_totals --
-- $1 projection names; worker-armed.
-- Events each projection still has to apply, over every tenant. A tenant with no
-- checkpoint row yet (no projector has seen it) counts from seq 0: unprocessed
-- events are lag whether or not a projector ever ran.
SELECT p.name AS projection, coalesce(sum(h.seq - coalesce(c.last_seq, 0)), 0)::bigint AS lag
  FROM unnest($1::text[]) AS p(name)
 CROSS JOIN tenant_heads h
  LEFT JOIN projection_checkpoints c ON c.projection = p.name AND c.tenant_id = h.tenant_id
 GROUP BY p.name

-- name: tickets_without_view --
-- $1 tenant_id, $2 limit, $3 the top-level keys of the ticket document: rows written
-- before tickets.view existed, or before one of these keys was added to the document
SELECT id, state_json FROM tickets
 WHERE tenant_id = $1 AND (view IS NULL OR NOT (view::jsonb ?& $3::text[]))
 LIMIT $2 FOR UPDATE

-- name: set_view --
-- $1 tenant_id, $2 ticket id, $3 view (as text)
UPDATE tickets SET view = $3::text::json WHERE tenant_id = $1 AND id = $2

-- Groups (projections/groups.py) ----------------------------------------------------------

-- name: insert_group --
-- $1 tenant_id, $2 id, $3 name, $4 members, $5 created_at
-- No row back: the name is taken (case aside) in the tenant.
INSERT INTO groups (tenant_id, id, name, members, version, created_at, updated_at)
VALUES ($1, $2, $3, $4, 1, $5, $5)
ON CONFLICT (tenant_id, lower(name)) DO NOTHING
RETURNING id, version, name, members, created_at, updated_at

-- name: group_for_update --
-- $1 tenant_id, $2 group id
-- Commands on one group queue on its row and decide on the state the last one committed.
SELECT id, version, name, members, created_at, updated_at
  FROM groups WHERE tenant_id = $1 AND id = $2 FOR UPDATE

-- name: get_group --
-- $1 tenant_id, $2 group id
SELECT id, version, name, members, created_at, updated_at
  FROM groups WHERE tenant_id = $1 AND id = $2

-- name: group_for_share --
-- $1 tenant_id, $2 group id
-- An assignment reads the members under a share lock: a change of members (FOR UPDATE)
-- waits for it, and then counts the ticket it assigned among those still held; an
-- assignment after the change reads the new members. Assignments do not wait on each
-- other.
SELECT id, version, name, members, created_at, updated_at
  FROM groups WHERE tenant_id = $1 AND id = $2 FOR SHARE

-- name: update_group --
-- $1 tenant_id, $2 id, $3 version, $4 name, $5 members, $6 updated_at
UPDATE groups SET version = $3, name = $4, members = $5, updated_at = $6
 WHERE tenant_id = $1 AND id = $2

-- name: group_named --
-- $1 tenant_id, $2 name
SELECT id FROM groups WHERE tenant_id = $1 AND lower(name) = lower($2)

-- name: list_groups --
-- $1 tenant_id, $2 cursor created_at (null: first page), $3 cursor id, $4 limit
SELECT id, version, name, members, created_at, updated_at
  FROM groups
 WHERE tenant_id = $1
   AND ($2::timestamptz IS NULL OR (created_at, id) > ($2::timestamptz, $3::uuid))
 ORDER BY created_at, id
 LIMIT $4

-- name: known_groups --
-- $1 tenant_id, $2 group ids
SELECT id FROM groups WHERE tenant_id = $1 AND id = ANY ($2::uuid[])

-- name: active_agents_among --
-- $1 tenant_id, $2 agent ids
SELECT id FROM agents WHERE tenant_id = $1 AND id = ANY ($2::uuid[]) AND active

-- name: tickets_held_in_group --
-- $1 tenant_id, $2 group id, $3 agent ids, $4 most ticket ids to name per agent
-- Tickets of the group that are still assigned to one of the agents (closed ones
-- aside): how many per agent, and the newest few of them.
SELECT assignee AS agent_id, count(*)::int AS tickets,
       (array_agg(id ORDER BY created_at DESC, id DESC))[1:$4] AS ticket_ids
  FROM tickets
 WHERE tenant_id = $1 AND group_id = $2 AND assignee = ANY ($3::uuid[])
   AND state <> 'closed'
 GROUP BY assignee
 ORDER BY assignee

-- name: ticket_field_catalog --
-- $1 tenant_id: every field definition of the tenant (a command checks values on them)
SELECT definition FROM ticket_fields WHERE tenant_id = $1 ORDER BY key

-- name: ticket_field --
-- $1 tenant_id, $2 key
SELECT definition FROM ticket_fields WHERE tenant_id = $1 AND key = $2

-- name: ticket_field_for_update --
-- $1 tenant_id, $2 key. Changes to one field queue on its row.
SELECT definition FROM ticket_fields WHERE tenant_id = $1 AND key = $2 FOR UPDATE

-- name: insert_ticket_field --
-- $1 tenant_id, $2 key, $3 stream_id, $4 type, $5 version, $6 definition, $7 created_at,
-- $8 updated_at. Nothing when the key exists (a concurrent definition won).
INSERT INTO ticket_fields (tenant_id, key, stream_id, type, version, definition, created_at,
                           updated_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
ON CONFLICT (tenant_id, key) DO NOTHING

-- name: update_ticket_field --
-- $1 tenant_id, $2 key, $3 version, $4 definition, $5 updated_at, $6 previous version
UPDATE ticket_fields SET version = $3, definition = $4, updated_at = $5
 WHERE tenant_id = $1 AND key = $2 AND version = $6

-- name: count_ticket_fields --
-- $1 tenant_id
SELECT count(*) FROM ticket_fields WHERE tenant_id = $1

-- name: insert_new_tickets --
-- $1 tenant_id, then one array element per ticket: $2 id, $3 version, $4 state,
-- $5 priority, $6 source, $7 assignee, $8 tags (a JSON array's text each: an array
-- of arrays must be rectangular), $9 subject, $10 requester, $11 follow_up_of, $12 clocks,
-- $13 state_json, $14 created_at, $15 updated_at, $16 view (text), $17 contact_id,
-- $18 sla_due, $19 fields
-- ``insert_ticket`` and ``set_ticket_fields`` for a batch of tickets opened together
-- (projections/inline.py ``apply_new_tickets``, an import's batch): one statement.
INSERT INTO tickets (tenant_id, id, version, state, priority, source, assignee, tags, subject,
                     requester, follow_up_of, clocks, state_json, created_at, updated_at, view,
                     contact_id, organization_id, sla_due, fields)
SELECT $1, t.id, t.version, t.state, t.priority, t.source, t.assignee,
       ARRAY(SELECT jsonb_array_elements_text(t.tags::jsonb)), t.subject, t.requester,
       t.follow_up_of, t.clocks, t.state_json, t.created_at, t.updated_at, t.view::json,
       t.contact_id,
       (SELECT c.organization_id FROM contacts c WHERE c.tenant_id = $1 AND c.id = t.contact_id),
       t.sla_due, t.fields
  FROM unnest($2::uuid[], $3::integer[], $4::text[], $5::text[], $6::text[], $7::uuid[],
              $8::text[], $9::text[], $10::jsonb[], $11::uuid[], $12::jsonb[], $13::jsonb[],
              $14::timestamptz[], $15::timestamptz[], $16::text[], $17::uuid[],
              $18::timestamptz[], $19::jsonb[])
       AS t(id, version, state, priority, source, assignee, tags, subject, requester,
            follow_up_of, clocks, state_json, created_at, updated_at, view, contact_id,
            sla_due, fields)

-- name: insert_new_messages --
-- $1 tenant_id, then one array element per message: $2 id, $3 ticket_id, $4 version,
-- $5 visibility, $6 author_kind, $7 author_id, $8 body, $9 created_at, $10 attachments
-- (JSON text; NULL: none)
-- ``insert_message`` for a batch (``apply_new_tickets``): one statement.
INSERT INTO messages (tenant_id, id, ticket_id, version, visibility, author_kind, author_id,
                      body, created_at, attachments)
SELECT $1, m.id, m.ticket_id, m.version, m.visibility, m.author_kind, m.author_id, m.body,
       m.created_at, m.attachments::jsonb
  FROM unnest($2::uuid[], $3::uuid[], $4::integer[], $5::text[], $6::text[], $7::text[],
              $8::text[], $9::timestamptz[], $10::text[])
       AS m(id, ticket_id, version, visibility, author_kind, author_id, body, created_at,
            attachments)

-- name: set_ticket_fields --
-- $1 tenant_id, $2 ticket id, $3 the ticket's field values by key
UPDATE tickets SET fields = $3 WHERE tenant_id = $1 AND id = $2

-- name: counted_field_keys --
-- $1 tenant_id: the fields analytics counts by value (types never change)
SELECT coalesce(array_agg(key), '{}') FROM ticket_fields
 WHERE tenant_id = $1 AND type IN ('checkbox', 'dropdown', 'multiselect')

-- name: write_field_batch --
-- $1 tenant_id; $2 ids of tickets whose field values changed, $3 their values (JSON
-- text); $4..$10 field daily (field_key, day, value, created, solved, reopened,
-- breached), added to what earlier batches wrote. After write_batch, which wrote the
-- ticket rows.
WITH tickets AS (
    UPDATE analytics_tickets a SET fields = v.fields::jsonb
      FROM unnest($2::uuid[], $3::text[]) AS v(ticket_id, fields)
     WHERE a.tenant_id = $1 AND a.ticket_id = v.ticket_id
    RETURNING 1
), daily AS (
    INSERT INTO analytics_field_daily AS d
        (tenant_id, field_key, day, value, created, solved, reopened, breached)
    SELECT $1::uuid, * FROM unnest($4::text[], $5::date[], $6::text[], $7::int[],
                                   $8::int[], $9::int[], $10::int[])
    ON CONFLICT (tenant_id, field_key, day, value) DO UPDATE SET
        created = d.created + excluded.created, solved = d.solved + excluded.solved,
        reopened = d.reopened + excluded.reopened, breached = d.breached + excluded.breached
    RETURNING 1
)
SELECT (SELECT count(*) FROM tickets) + (SELECT count(*) FROM daily)

-- name: write_summary_cells --
-- $1 tenant_id; $2..$28 summary cell changes (span, start_day, dim, key, the
-- seventeen counters, the six histograms as int array literals:
-- projections.analytics_cells COUNTERS and METRICS order), added to what earlier
-- batches wrote (negative where tickets left a cell).
INSERT INTO analytics_summary_cells AS c (
    tenant_id, span, start_day, dim, key, tickets, solved, met_first_response,
    met_next_reply, met_resolution, ever_solved, reopened, one_touch, deflected,
    measured_requester_wait, met_requester_wait, periodic_updates, periodic_updates_met,
    rated, rated_good, measured_agent_work, met_agent_work,
    first_reply, first_reply_business, resolution, resolution_open, requester_wait,
    agent_work)
SELECT $1::uuid, span, start_day, dim, key, tickets, solved, met_first_response,
       met_next_reply, met_resolution, ever_solved, reopened, one_touch, deflected,
       measured_requester_wait, met_requester_wait, periodic_updates, periodic_updates_met,
       rated, rated_good, measured_agent_work, met_agent_work,
       first_reply::int[], first_reply_business::int[], resolution::int[],
       resolution_open::int[], requester_wait::int[], agent_work::int[]
  FROM unnest($2::int[], $3::date[], $4::text[], $5::text[], $6::int[], $7::int[],
              $8::int[], $9::int[], $10::int[], $11::int[], $12::int[], $13::int[],
              $14::int[], $15::int[], $16::int[], $17::int[], $18::int[], $19::int[],
              $20::int[], $21::int[], $22::int[], $23::text[], $24::text[], $25::text[],
              $26::text[], $27::text[], $28::text[])
       AS v(span, start_day, dim, key, tickets, solved, met_first_response, met_next_reply,
            met_resolution, ever_solved, reopened, one_touch, deflected,
            measured_requester_wait, met_requester_wait, periodic_updates,
            periodic_updates_met, rated, rated_good, measured_agent_work, met_agent_work,
            first_reply, first_reply_business, resolution, resolution_open, requester_wait,
            agent_work)
ON CONFLICT (tenant_id, dim, span, start_day, key) DO UPDATE SET
    tickets = c.tickets + excluded.tickets, solved = c.solved + excluded.solved,
    met_first_response = c.met_first_response + excluded.met_first_response,
    met_next_reply = c.met_next_reply + excluded.met_next_reply,
    met_resolution = c.met_resolution + excluded.met_resolution,
    ever_solved = c.ever_solved + excluded.ever_solved,
    reopened = c.reopened + excluded.reopened, one_touch = c.one_touch + excluded.one_touch,
    deflected = c.deflected + excluded.deflected,
    measured_requester_wait = c.measured_requester_wait + excluded.measured_requester_wait,
    met_requester_wait = c.met_requester_wait + excluded.met_requester_wait,
    periodic_updates = c.periodic_updates + excluded.periodic_updates,
    periodic_updates_met = c.periodic_updates_met + excluded.periodic_updates_met,
    rated = c.rated + excluded.rated, rated_good = c.rated_good + excluded.rated_good,
    measured_agent_work = c.measured_agent_work + excluded.measured_agent_work,
    met_agent_work = c.met_agent_work + excluded.met_agent_work,
    first_reply = histogram_add(c.first_reply, excluded.first_reply),
    first_reply_business = histogram_add(c.first_reply_business,
                                         excluded.first_reply_business),
    resolution = histogram_add(c.resolution, excluded.resolution),
    resolution_open = histogram_add(c.resolution_open, excluded.resolution_open),
    requester_wait = histogram_add(c.requester_wait, excluded.requester_wait),
    agent_work = histogram_add(c.agent_work, excluded.agent_work)

-- name: summary_cells --
-- $1 tenant_id, $2 dims, $3 spans and $4 start days of the cells that cover the range,
-- $5 key each day by itself (group_by day, over one-day cells)
-- The cells as they are: the caller adds them up per dim and key (summing histograms
-- here, in a SQL aggregate over arrays, cost ten times what fetching them does).
SELECT c.dim,
       CASE WHEN $5::boolean THEN to_char(c.start_day, 'YYYY-MM-DD') ELSE c.key END AS key,
       c.tickets, c.solved, c.met_first_response, c.met_next_reply, c.met_resolution,
       c.ever_solved, c.reopened, c.one_touch, c.deflected, c.measured_requester_wait,
       c.met_requester_wait, c.periodic_updates, c.periodic_updates_met, c.rated,
       c.rated_good, c.measured_agent_work, c.met_agent_work, c.first_reply,
       c.first_reply_business, c.resolution, c.resolution_open, c.requester_wait,
       c.agent_work
  FROM unnest($3::int[], $4::date[]) AS r(span, start_day)
  JOIN analytics_summary_cells c
    ON c.tenant_id = $1 AND c.dim = ANY($2::text[]) AND c.span = r.span
   AND c.start_day = r.start_day

-- name: summary_cells_agree --
-- $1 tenant_id: whether the summary cells count every ticket row once (the 256-day
-- cells of all hold every ticket)
SELECT (SELECT count(*) FROM analytics_tickets WHERE tenant_id = $1)
       = (SELECT coalesce(sum(tickets), 0) FROM analytics_summary_cells
           WHERE tenant_id = $1 AND dim = 'all' AND span = 256)
   AND NOT EXISTS (SELECT FROM analytics_summary_cells WHERE tenant_id = $1 AND tickets < 0)

-- name: lock_checkpoint --
-- $1 projection, $2 tenant_id; tenant-armed: waits out a batch in flight and holds
-- off the next one until the transaction ends
SELECT last_seq FROM projection_checkpoints
 WHERE projection = $1 AND tenant_id = $2 FOR UPDATE

-- name: all_analytics_tickets --
-- $1 tenant_id
SELECT * FROM analytics_tickets WHERE tenant_id = $1

-- name: count_staff_notes --
-- $1 tenant_id: the staff notes (internal MessageAdded by an agent) of each ticket row
-- counted before they were (staff_notes null), from its events up to the row's
-- last_seq; answers how many rows it counted.
WITH counted AS (
    UPDATE analytics_tickets a
       SET staff_notes = (SELECT count(*) FROM events e
                           WHERE e.tenant_id = a.tenant_id AND e.stream_id = a.ticket_id
                             AND e.seq <= a.last_seq AND e.type = 'MessageAdded'
                             AND e.data ->> 'visibility' = 'internal'
                             AND e.data -> 'author' ->> 'kind' = 'agent')
     WHERE a.tenant_id = $1 AND a.staff_notes IS NULL
    RETURNING 1
)
SELECT count(*) FROM counted

-- name: delete_summary_cells --
-- $1 tenant_id
DELETE FROM analytics_summary_cells WHERE tenant_id = $1

-- name: text_search_config --
-- $1 tenant_id: the tenant's text-search configuration (settings `text_search`)
SELECT coalesce((SELECT settings ->> 'text_search' FROM tenant_settings
                  WHERE tenant_id = $1), 'simple')::regconfig::text

-- name: index_tickets --
-- $1 tenant_id, $2 ticket ids, $3 text-search configuration (NULL: the tenant's, read
-- here, so indexing on the write path is one statement)
-- A ticket's search vectors, recomputed from its read-model rows: subject (weight A),
-- tags and requester (B), message bodies (C). Public messages go into both vectors,
-- internal notes only into staff_document, each body's vector on its own, in version
-- order (migration 0530). Recomputed whole when the head changes (an opening, tags, the
-- requester): the cost is the ticket's messages, read by their keyset index; a new
-- message alone is appended instead (index_ticket_message). The function (migration
-- 0461) reads the ticket whole even in a customer's transaction.
SELECT index_ticket_documents($1, $2::uuid[], coalesce(
           $3::text, (SELECT settings ->> 'text_search' FROM tenant_settings
                       WHERE tenant_id = $1), 'simple')::regconfig)

-- name: index_new_ticket --
-- $1 tenant_id, $2 ticket id, $3 subject, $4 tags, $5 requester name, $6 requester
-- e-mail, $7 the opening message's body
-- A ticket just opened, from the values its command holds: what index_tickets computes
-- from the rows (the head, then the one public message), without reading the rows
-- back. A function (migration 0535), so a customer's transaction, which reads no
-- search row, can write this one.
SELECT index_new_ticket($1::uuid, $2::uuid, $3::text, $4::text[], $5::text, $6::text,
                        $7::text)

-- name: index_ticket_message --
-- $1 tenant_id, $2 ticket id, $3 the message's body, $4 whether it is public
-- One new message of a ticket whose head (subject, tags, requester) did not change:
-- its body's vector is appended to the ticket's vectors (public messages to both,
-- internal notes to the staff vector only), which is what recomputing them would give
-- (migration 0530). No other message is read, so a reply costs the same on a thread
-- of any length. A function (migration 0535), as index_new_ticket is.
SELECT index_ticket_message($1::uuid, $2::uuid, $3::text, $4::boolean)

-- name: index_contacts --
-- $1 tenant_id, $2 contact ids, $3 text-search configuration (NULL: the tenant's, read
-- here, so indexing one new contact on the write path is one round trip)
-- A contact's vector: name and e-mail (A), phone (B). The e-mail is also split at its
-- punctuation (`ann`, `example`, `com` besides `ann@example.com`) and the phone kept
-- as its digits too, so a part of either finds it. Anyone who may search may see all
-- of it: both vectors are the same. A merged contact is not found (its reads redirect
-- to the survivor): it gets no row, and drop_search_document removes the one it had.
-- The statement is a function (migration 0535), so a widget opening, whose transaction
-- reads no search row, can write the row of the contact it creates.
SELECT index_contact_documents($1::uuid, $2::uuid[], $3::text)

-- name: drop_search_document --
-- $1 tenant_id, $2 kind, $3 id: the thing is found no more (a contact merged away)
DELETE FROM search_documents WHERE tenant_id = $1 AND kind = $2 AND id = $3

-- name: index_organizations --
-- $1 tenant_id, $2 organization ids, $3 text-search configuration (NULL: the tenant's)
-- An organization's vector: name (A), domains (B), each domain also split at its dots.
WITH cfg AS (
    SELECT coalesce($3::text, (SELECT settings ->> 'text_search' FROM tenant_settings
                                WHERE tenant_id = $1), 'simple')::regconfig AS c
)
INSERT INTO search_documents (tenant_id, kind, id, document, staff_document)
SELECT o.tenant_id, 'organization', o.id, v.doc, v.doc
  FROM organizations o
 CROSS JOIN cfg
 CROSS JOIN LATERAL (
       SELECT setweight(to_tsvector(cfg.c, o.name), 'A')
              || setweight(to_tsvector(cfg.c, array_to_string(o.domains, ' ') || ' '
                  || translate(array_to_string(o.domains, ' '), '.-', '  ')), 'B') AS doc) v
 WHERE o.tenant_id = $1 AND o.id = ANY ($2::uuid[])
ON CONFLICT (tenant_id, kind, id) DO UPDATE
   SET document = EXCLUDED.document, staff_document = EXCLUDED.staff_document

-- name: contact_ids_after --
-- $1 tenant_id, $2 after id, $3 limit: the tenant's contacts in id order, for a re-index
SELECT id FROM contacts WHERE tenant_id = $1 AND id > $2 ORDER BY id LIMIT $3

-- name: organization_ids_after --
-- $1 tenant_id, $2 after id, $3 limit: the tenant's organizations in id order
SELECT id FROM organizations WHERE tenant_id = $1 AND id > $2 ORDER BY id LIMIT $3

-- name: unindexed_contacts --
-- $1 tenant_id, $2 limit: contacts (not merged) without a search row
SELECT c.id FROM contacts c
 WHERE c.tenant_id = $1 AND c.merged_into IS NULL
   AND NOT EXISTS (SELECT FROM search_documents s
                    WHERE s.tenant_id = $1 AND s.kind = 'contact' AND s.id = c.id)
 LIMIT $2

-- name: unindexed_organizations --
-- $1 tenant_id, $2 limit: organizations without a search row
SELECT o.id FROM organizations o
 WHERE o.tenant_id = $1
   AND NOT EXISTS (SELECT FROM search_documents s
                    WHERE s.tenant_id = $1 AND s.kind = 'organization' AND s.id = o.id)
 LIMIT $2

-- name: search_contacts --
-- $1 tenant_id, $2 query text, $3 text-search configuration, $4 cursor rank (NULL: the
-- first page), $5 cursor id, $6 limit, $7 staff. As search_tickets, over contacts: the
-- row as GET /v1/contacts/{id} shows it, and a snippet of name, e-mail and phone.
WITH q AS (SELECT websearch_to_tsquery($3::regconfig, $2) AS query),
page AS (
    SELECT m.id, m.rank
      FROM q, search_matches('contact', q.query, $7::boolean) m
     WHERE $4::real IS NULL OR m.rank < $4::real OR (m.rank = $4::real AND m.id > $5::uuid)
     ORDER BY m.rank DESC, m.id
     LIMIT $6
)
SELECT p.rank, c.id, c.version, c.email, c.name, c.phone, c.external_id, c.organization_id,
       c.tags, c.merged_into, c.created_at, c.updated_at,
       ts_headline($3::regconfig, translate(concat_ws(' … ', c.name, c.email, c.phone),
                                            E'\uE000\uE001', ''),
                   q.query, E'StartSel=\uE000, StopSel=\uE001, HighlightAll=true') AS snippet
  FROM page p
  JOIN contacts c ON c.tenant_id = $1 AND c.id = p.id
 CROSS JOIN q
 ORDER BY p.rank DESC, p.id

-- name: search_organizations --
-- $1 tenant_id, $2 query text, $3 text-search configuration, $4 cursor rank (NULL: the
-- first page), $5 cursor id, $6 limit, $7 staff. As search_contacts, over organizations.
WITH q AS (SELECT websearch_to_tsquery($3::regconfig, $2) AS query),
page AS (
    SELECT m.id, m.rank
      FROM q, search_matches('organization', q.query, $7::boolean) m
     WHERE $4::real IS NULL OR m.rank < $4::real OR (m.rank = $4::real AND m.id > $5::uuid)
     ORDER BY m.rank DESC, m.id
     LIMIT $6
)
SELECT p.rank, o.id, o.version, o.name, o.domains, o.created_at, o.updated_at,
       ts_headline($3::regconfig, translate(concat_ws(' … ', o.name,
                       array_to_string(o.domains, ' ')), E'\uE000\uE001', ''),
                   q.query, E'StartSel=\uE000, StopSel=\uE001, HighlightAll=true') AS snippet
  FROM page p
  JOIN organizations o ON o.tenant_id = $1 AND o.id = p.id
 CROSS JOIN q
 ORDER BY p.rank DESC, p.id

-- name: ticket_ids_after --
-- $1 tenant_id, $2 after id, $3 limit: the tenant's tickets in id order, for a re-index
SELECT id FROM tickets WHERE tenant_id = $1 AND id > $2 ORDER BY id LIMIT $3

-- name: drop_search_documents --
-- $1 tenant_id, $2 kind
DELETE FROM search_documents WHERE tenant_id = $1 AND kind = $2

-- name: unindexed_tickets --
-- $1 tenant_id, $2 limit: tickets without a search row (written before search existed)
SELECT t.id FROM tickets t
 WHERE t.tenant_id = $1
   AND NOT EXISTS (SELECT FROM search_documents s
                    WHERE s.tenant_id = $1 AND s.kind = 'ticket' AND s.id = t.id)
 LIMIT $2

-- name: search_tickets --
-- $1 tenant_id, $2 query text, $3 text-search configuration, $4 cursor rank (NULL: the
-- first page), $5 cursor id, $6 limit, $7 staff (search internal notes too)
-- Matches come from search_matches() (migration 0350: under row-level security the
-- GIN index is only usable there) through ticket_search_matches() (0912: a merge's
-- target is not found or ranked by the words of a merged ticket hidden from a scoped
-- caller), ranked by ts_rank (weights: subject over tags and
-- requester over bodies), then id, as a keyset: the page after (rank, id) is lower
-- ranks, or the same rank and higher ids. The snippet is made for the page's rows
-- only: ts_headline reads the text again, which is what makes it the costly part.
-- A merge's target is found by its merged tickets' messages (migration 0911), so its
-- snippet reads them too, as its thread lists them.
-- Snippets are highlighted on the raw text (parsed as the index parsed it), between
-- two private-use characters taken out of the text first; projections/search.py
-- escapes the result and only then turns those into <mark> tags.
WITH q AS (SELECT websearch_to_tsquery($3::regconfig, $2) AS query),
page AS (
    SELECT m.id, m.rank
      FROM q, ticket_search_matches(q.query, $3::regconfig, $7::boolean) m
     WHERE $4::real IS NULL OR m.rank < $4::real OR (m.rank = $4::real AND m.id > $5::uuid)
     ORDER BY m.rank DESC, m.id
     LIMIT $6
)
SELECT p.id, p.rank, t.view::text AS view,
       ts_headline($3::regconfig, translate(concat_ws(' … ', t.subject, (
                       SELECT string_agg(m.body, ' … ' ORDER BY m.created_at, m.id)
                         FROM messages m
                        WHERE m.tenant_id = $1
                          AND m.ticket_id = ANY (array_prepend(p.id, ARRAY(
                                  SELECT jsonb_array_elements_text(coalesce(
                                             t.state_json -> 'merged_from', '[]'))::uuid)))
                          AND (m.visibility = 'public' OR $7::boolean)),
                       array_to_string(t.tags, ' '), t.requester ->> 'name',
                       t.requester ->> 'email'), E'\uE000\uE001', ''),
                   q.query,
                   E'StartSel=\uE000, StopSel=\uE001, MaxWords=24, MinWords=8, '
                   'MaxFragments=2, FragmentDelimiter=" … "') AS snippet
  FROM page p
  JOIN tickets t ON t.tenant_id = $1 AND t.id = p.id
 CROSS JOIN q
 ORDER BY p.rank DESC, p.id

-- name: query_words --
-- $1 query text, $2 text-search configuration: how many terms the query has once
-- parsed (0: nothing to search for, only operators, punctuation or stop words), and
-- whether any of them can be looked up in the index (querytree() is 'T' for a query
-- of exclusions only, such as `-word`, which every other document matches)
SELECT numnode(q) AS terms, querytree(q) <> 'T' AS findable
  FROM websearch_to_tsquery($2::regconfig, $1) AS q
