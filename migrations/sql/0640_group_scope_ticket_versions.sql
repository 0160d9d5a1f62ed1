-- Group-scoped access (0600) covers the kept versions of tickets (0611) as well: an agent
-- whose scope leaves a ticket out lists none of its past in an as-of list either. As for
-- the events of a ticket's stream, the ticket as it is now decides, through the tickets
-- policy (so a ticket the agent has just handed off stays readable to its command).
CREATE POLICY group_scope ON ticket_versions AS RESTRICTIVE FOR SELECT TO helpdesk_runtime
    USING ((SELECT acting_agent_scope() IS NULL) IS DISTINCT FROM false
           OR EXISTS (SELECT 1 FROM tickets t
                       WHERE t.tenant_id = ticket_versions.tenant_id
                         AND t.id = ticket_versions.id));
