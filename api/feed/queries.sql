-- name: hidden_streams --
-- $1 tenant_id, $2 stream ids
-- Whether the armed actor is under group-scoped access (migration 0600), and which of
-- the streams are tickets outside its scope: read by the same functions the events
-- policy reads with, so a room holds exactly what the changes feed would show.
SELECT acting_agent_scope() IS NOT NULL AS scoped,
       coalesce((SELECT array_agg(s) FROM unnest($2::uuid[]) s
                  WHERE NOT agent_reads_stream(acting_agent_scope(), $1, s)),
                '{}'::uuid[]) AS hidden

-- name: presence_target --
-- $1 tenant_id, $2 ticket id, $3 agent id
-- Whether the armed actor may see the ticket (row-level security: the tenant's own,
-- and under group-scoped access only those of its groups), and the present agent's name.
SELECT EXISTS (SELECT 1 FROM tickets WHERE tenant_id = $1 AND id = $2) AS visible,
       (SELECT name FROM agents WHERE tenant_id = $1 AND id = $3) AS agent_name

-- name: notice_facts --
-- $1 tenant_id, $2 ticket ids, $3 ids of the API keys that acted
-- Who follows each ticket now (tickets' state_json.followers), and the agent each
-- acting key belongs to: an agent's own action, by any of its keys, notifies no one of
-- it to that agent.
SELECT (SELECT coalesce(jsonb_object_agg(t.id::text, t.state_json -> 'followers'), '{}')
          FROM tickets t
         WHERE t.tenant_id = $1 AND t.id = ANY($2::uuid[])
           AND jsonb_typeof(t.state_json -> 'followers') = 'array') AS followers,
       (SELECT coalesce(jsonb_object_agg(k.id::text, k.agent_id::text), '{}')
          FROM api_keys k
         WHERE k.tenant_id = $1 AND k.id = ANY($3::uuid[]) AND k.agent_id IS NOT NULL)
           AS key_agents
