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
-- $1 ticket id, $2 agent id
-- Whether the armed actor may see the ticket (row-level security: the tenant's own,
-- and under group-scoped access only those of its groups), and the present agent's name.
SELECT EXISTS (SELECT 1 FROM tickets WHERE id = $1) AS visible,
       (SELECT name FROM agents WHERE id = $2) AS agent_name
