-- Statements of the rule read models (projections/rules.py).

-- name: get_rule --
-- $1 tenant_id, $2 rule id
SELECT id, version, name, position, active, conditions, actions, time, created_at, updated_at
  FROM rules WHERE tenant_id = $1 AND id = $2

-- name: rule_for_update --
-- $1 tenant_id, $2 rule id
SELECT id, version, name, position, active, conditions, actions, time, created_at, updated_at
  FROM rules WHERE tenant_id = $1 AND id = $2 FOR UPDATE

-- name: lock_rule_count --
-- $1 tenant_id. Two creations at once queue here, so the count they check is exact.
SELECT pg_advisory_xact_lock(hashtextextended('rules:' || $1::uuid::text, 0))

-- name: count_rules --
-- $1 tenant_id
SELECT count(*) FROM rules WHERE tenant_id = $1

-- name: insert_rule --
-- $1 tenant_id, $2 id, $3 name, $4 position, $5 active, $6 conditions, $7 actions,
-- $8 version, $9 created_at, $10 updated_at, $11 time (NULL: a rule on events)
INSERT INTO rules (tenant_id, id, name, position, active, conditions, actions, version,
                   created_at, updated_at, time)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)

-- name: update_rule --
-- $1 tenant_id, $2 id, $3 name, $4 position, $5 active, $6 conditions, $7 actions,
-- $8 version, $9 created_at (unchanged), $10 updated_at, $11 time
UPDATE rules
   SET name = $3, position = $4, active = $5, conditions = $6, actions = $7, version = $8,
       updated_at = $10, time = $11
 WHERE tenant_id = $1 AND id = $2 AND created_at = $9

-- name: list_rules --
-- $1 tenant_id, $2 cursor created_at (null: first page), $3 cursor id, $4 limit
SELECT id, version, name, position, active, conditions, actions, time, created_at, updated_at
  FROM rules
 WHERE tenant_id = $1
   AND ($2::timestamptz IS NULL OR (created_at, id) > ($2::timestamptz, $3::uuid))
 ORDER BY created_at, id
 LIMIT $4

-- name: active_rules --
-- $1 tenant_id. What the engine runs, in order.
SELECT id, version, name, position, active, conditions, actions, time, created_at, updated_at
  FROM rules
 WHERE tenant_id = $1 AND active
 ORDER BY position, created_at, id

-- name: all_rules --
-- $1 tenant_id. Every rule, active or not (the dry run).
SELECT id, version, name, position, active, conditions, actions, time, created_at, updated_at
  FROM rules
 WHERE tenant_id = $1
 ORDER BY position, created_at, id

-- name: chain_depth --
-- $1 tenant_id, $2 seq of an event a rule appended: the depth of the firing that did.
SELECT depth FROM rule_firings
 WHERE tenant_id = $1 AND last_seq >= $2 AND first_seq <= $2
 ORDER BY last_seq
 LIMIT 1

-- name: record_firings --
-- $1 tenant_id, then arrays, one element per firing: $2 trigger_seq, $3 rule_id,
-- $4 ticket_id, $5 depth, $6 first_seq, $7 last_seq, $8 outcome, $9 detail, $10 fired_at
-- (a batch's firings in one statement)
INSERT INTO rule_firings (tenant_id, trigger_seq, rule_id, ticket_id, depth, first_seq,
                          last_seq, outcome, detail, fired_at)
SELECT $1, f.* FROM unnest($2::bigint[], $3::uuid[], $4::uuid[], $5::int[], $6::bigint[],
                           $7::bigint[], $8::text[], $9::text[], $10::timestamptz[])
                    AS f(trigger_seq, rule_id, ticket_id, depth, first_seq, last_seq,
                         outcome, detail, fired_at)

-- name: firings_of_ticket --
-- $1 tenant_id, $2 ticket_id, $3 limit: the newest first
SELECT trigger_seq, rule_id, depth, first_seq, last_seq, outcome, detail, fired_at
  FROM rule_firings
 WHERE tenant_id = $1 AND ticket_id = $2
 ORDER BY trigger_seq DESC, rule_id
 LIMIT $3

-- name: arm_rule_actor --
-- $1 rule id. The actor the database stamps on what the rule's actions append; and
-- every commit of the engine is durable (its events are seen by the feed at once).
SELECT set_config('app.actor_kind', 'rule', true),
       set_config('app.actor_id', $1::text, true),
       set_config('synchronous_commit', 'on', true)

-- name: upsert_ticket_times --
-- $1 tenant_id, $2 ticket ids, $3 created_at (NULL: not in this batch), $4 updated_at,
-- $5 whether pending_since changes, $6 pending_since, $7 customer_reply_at (NULL: no
-- change), $8 agent_reply_at (NULL: no change); arrays, one element per ticket
INSERT INTO rule_ticket_times AS r (tenant_id, ticket_id, created_at, updated_at,
                                    pending_since, customer_reply_at, agent_reply_at)
SELECT $1, t.id, coalesce(t.created, t.updated), t.updated, t.pending, t.customer, t.agent
  FROM unnest($2::uuid[], $3::timestamptz[], $4::timestamptz[], $5::boolean[],
              $6::timestamptz[], $7::timestamptz[], $8::timestamptz[])
       AS t(id, created, updated, changed, pending, customer, agent)
ON CONFLICT (tenant_id, ticket_id) DO UPDATE
   SET updated_at = greatest(r.updated_at, excluded.updated_at),
       pending_since = CASE WHEN (SELECT u.changed FROM unnest($2::uuid[], $5::boolean[])
                                                    AS u(id, changed)
                                   WHERE u.id = r.ticket_id)
                            THEN excluded.pending_since ELSE r.pending_since END,
       customer_reply_at = coalesce(excluded.customer_reply_at, r.customer_reply_at),
       agent_reply_at = coalesce(excluded.agent_reply_at, r.agent_reply_at)

-- name: ticket_times --
-- $1 tenant_id, $2 ticket_id
SELECT created_at, updated_at, pending_since, customer_reply_at, agent_reply_at
  FROM rule_ticket_times WHERE tenant_id = $1 AND ticket_id = $2

-- name: claim_time_firing --
-- $1 tenant_id, $2 rule_id, $3 ticket_id, $4 episode, $5 fired_at: the episode's one
-- firing (NULL: it fired already)
INSERT INTO rule_time_firings (tenant_id, rule_id, ticket_id, episode, outcome, fired_at)
VALUES ($1, $2, $3, $4, 'fired', $5)
ON CONFLICT DO NOTHING
RETURNING episode

-- name: refuse_time_firing --
-- $1 tenant_id, $2 rule_id, $3 ticket_id, $4 episode, $5 detail
UPDATE rule_time_firings SET outcome = 'refused', detail = $5
 WHERE tenant_id = $1 AND rule_id = $2 AND ticket_id = $3 AND episode = $4

-- name: ticket_states --
-- $1 tenant_id, $2 ticket ids
SELECT id, state_json FROM tickets WHERE tenant_id = $1 AND id = ANY ($2::uuid[])

-- name: ticket_events --
-- $1 tenant_id, $2 ticket_id, $3 after version, $4 through version: what the rule
-- engine folds to know a ticket right after one of its events
SELECT type, schema_version, data
  FROM events
 WHERE tenant_id = $1 AND stream_id = $2 AND version > $3 AND version <= $4
 ORDER BY version

-- name: time_firings_of_ticket --
-- $1 tenant_id, $2 ticket_id, $3 time rule ids: the episodes they fired (or were
-- refused) for on the ticket
SELECT rule_id, episode, outcome, fired_at
  FROM rule_time_firings
 WHERE tenant_id = $1 AND rule_id = ANY ($3::uuid[]) AND ticket_id = $2

-- name: time_due --
-- $1 tenant_id, $2 the time rules as a JSON array of {rule_id, since, started_by,
-- state, priority, channel}: since names the clock (the CASE below; projections/rules.py
-- SINCE_COLUMNS), started_by the latest start at which its hours have run by now
-- (business hours included), state/priority/channel the values its conditions allow
-- (null: any).
-- One statement for every time rule of the tenant: the (rule, ticket, episode) due now
-- and not fired for, of the tickets not closed, with what the rest of the conditions
-- ask of the ticket (its row's columns, not its state document).
SELECT q.rule_id, r.ticket_id, e.episode, t.state, t.priority, t.source, t.group_id,
       t.assignee, t.organization_id, t.tags, t.fields
  FROM jsonb_to_recordset($2::jsonb)
       AS q(rule_id uuid, since text, started_by timestamptz, state text[],
            priority text[], channel text[])
  JOIN rule_ticket_times r ON r.tenant_id = $1
 CROSS JOIN LATERAL (SELECT CASE q.since WHEN 'created' THEN r.created_at
                                         WHEN 'updated' THEN r.updated_at
                                         WHEN 'pending' THEN r.pending_since
                                         WHEN 'customer_reply' THEN r.customer_reply_at
                                         WHEN 'agent_reply' THEN r.agent_reply_at
                                    END AS episode) e
  JOIN tickets t ON t.tenant_id = r.tenant_id AND t.id = r.ticket_id
 WHERE e.episode <= q.started_by AND t.state <> 'closed'
   AND (q.state IS NULL OR t.state = ANY (q.state))
   AND (q.priority IS NULL OR t.priority = ANY (q.priority))
   AND (q.channel IS NULL OR t.source = ANY (q.channel))
   AND NOT EXISTS (SELECT 1 FROM rule_time_firings f
                    WHERE f.tenant_id = $1 AND f.rule_id = q.rule_id
                      AND f.ticket_id = r.ticket_id AND f.episode = e.episode)
