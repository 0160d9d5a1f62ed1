-- Agents hold a team role (admin or agent); the agent events carry it, so the
-- read model keeps it too.
ALTER TABLE agents ADD COLUMN role text NOT NULL DEFAULT 'agent'
    CHECK (role IN ('admin', 'agent'));

-- The audit feed filters by actor and walks by seq; without this index a filter on a
-- quiet actor would scan the tenant's whole history.
CREATE INDEX events_tenant_actor_seq ON events (tenant_id, actor_id, seq);
