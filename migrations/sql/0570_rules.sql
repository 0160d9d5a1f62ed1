-- Rules: the inline read model of the rule streams (domain/rule.py), written in the
-- same transaction as their events; and what the rule engine did, per trigger.

CREATE TABLE rules (
    tenant_id   uuid NOT NULL REFERENCES tenants (id),
    id          uuid NOT NULL,
    name        text NOT NULL,
    position    integer NOT NULL CHECK (position >= 0),
    active      boolean NOT NULL,
    conditions  jsonb NOT NULL,
    actions     jsonb NOT NULL,
    version     integer NOT NULL CHECK (version >= 1),
    created_at  timestamptz NOT NULL,
    updated_at  timestamptz NOT NULL,
    PRIMARY KEY (tenant_id, id)
);
-- The order rules run in; and the list's keyset order.
CREATE INDEX rules_order ON rules (tenant_id, position, created_at, id);
CREATE INDEX rules_listing ON rules (tenant_id, created_at, id);

ALTER TABLE rules ENABLE ROW LEVEL SECURITY;
ALTER TABLE rules FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON rules
    USING (tenant_id = nullif(current_setting('app.tenant_id', true), '')::uuid)
    WITH CHECK (tenant_id = nullif(current_setting('app.tenant_id', true), '')::uuid);
GRANT SELECT, INSERT, UPDATE ON rules TO helpdesk_runtime;

-- One row per rule the engine matched on an event, committed with the rule's events
-- and the engine's checkpoint: the seqs its actions appended (first_seq..last_seq,
-- NULL when they changed nothing), and the depth of the chain it was part of (1: it
-- acted on an event nobody's rule caused). An event appended by a rule finds its
-- depth here, for the chain limit.
CREATE TABLE rule_firings (
    tenant_id    uuid NOT NULL REFERENCES tenants (id),
    trigger_seq  bigint NOT NULL,
    rule_id      uuid NOT NULL,
    ticket_id    uuid NOT NULL,
    depth        integer NOT NULL CHECK (depth >= 1),
    first_seq    bigint,
    last_seq     bigint,
    outcome      text NOT NULL CHECK (outcome IN ('fired', 'refused', 'stopped')),
    detail       text,
    fired_at     timestamptz NOT NULL,
    PRIMARY KEY (tenant_id, trigger_seq, rule_id)
);
CREATE INDEX rule_firings_caused ON rule_firings (tenant_id, last_seq) WHERE last_seq IS NOT NULL;
CREATE INDEX rule_firings_ticket ON rule_firings (tenant_id, ticket_id, trigger_seq);

ALTER TABLE rule_firings ENABLE ROW LEVEL SECURITY;
ALTER TABLE rule_firings FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON rule_firings
    USING (tenant_id = nullif(current_setting('app.tenant_id', true), '')::uuid)
    WITH CHECK (tenant_id = nullif(current_setting('app.tenant_id', true), '')::uuid);
GRANT SELECT, INSERT ON rule_firings TO helpdesk_runtime;

-- The rule engine starts at each existing tenant's head: rules made from now on act on
-- events from now on, never on the history before them.
INSERT INTO projection_checkpoints (projection, tenant_id, last_seq)
SELECT 'rules', h.tenant_id, h.seq FROM tenant_heads h
ON CONFLICT DO NOTHING;
