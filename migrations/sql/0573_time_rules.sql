-- Rules on time: a rule's trigger, when each ticket's clocks for time rules started, and
-- the episodes each time rule fired for.

ALTER TABLE rules ADD COLUMN time jsonb;

-- Kept by the rule engine from the ticket events it reads (handlers/rule_engine.py):
-- when a ticket was created and last updated, since when it is pending (NULL: it is
-- not), and its last public reply by the customer and by an agent.
CREATE TABLE rule_ticket_times (
    tenant_id          uuid NOT NULL REFERENCES tenants (id),
    ticket_id          uuid NOT NULL,
    created_at         timestamptz NOT NULL,
    updated_at         timestamptz NOT NULL,
    pending_since      timestamptz,
    customer_reply_at  timestamptz,
    agent_reply_at     timestamptz,
    PRIMARY KEY (tenant_id, ticket_id)
);

ALTER TABLE rule_ticket_times ENABLE ROW LEVEL SECURITY;
ALTER TABLE rule_ticket_times FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON rule_ticket_times
    USING (tenant_id = nullif(current_setting('app.tenant_id', true), '')::uuid)
    WITH CHECK (tenant_id = nullif(current_setting('app.tenant_id', true), '')::uuid);
GRANT SELECT, INSERT, UPDATE ON rule_ticket_times TO helpdesk_runtime;

-- The tickets there are now, as far as their rows tell.
INSERT INTO rule_ticket_times (tenant_id, ticket_id, created_at, updated_at, pending_since)
SELECT tenant_id, id, created_at, updated_at,
       CASE WHEN state = 'pending' THEN updated_at END
  FROM tickets
ON CONFLICT DO NOTHING;

-- One row per (time rule, ticket, episode) the rule fired for: its episode is the start
-- of the time it counts (a new reply, a new pending spell: a new episode). Written with
-- the rule's actions, so a second job for the same episode finds it and does nothing.
CREATE TABLE rule_time_firings (
    tenant_id   uuid NOT NULL REFERENCES tenants (id),
    rule_id     uuid NOT NULL,
    ticket_id   uuid NOT NULL,
    episode     timestamptz NOT NULL,
    outcome     text NOT NULL DEFAULT 'fired' CHECK (outcome IN ('fired', 'refused')),
    detail      text,
    fired_at    timestamptz NOT NULL,
    PRIMARY KEY (tenant_id, rule_id, ticket_id, episode)
);

ALTER TABLE rule_time_firings ENABLE ROW LEVEL SECURITY;
ALTER TABLE rule_time_firings FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON rule_time_firings
    USING (tenant_id = nullif(current_setting('app.tenant_id', true), '')::uuid)
    WITH CHECK (tenant_id = nullif(current_setting('app.tenant_id', true), '')::uuid);
GRANT SELECT, INSERT, UPDATE ON rule_time_firings TO helpdesk_runtime;
