-- The revision of each tenant's SLA policies and calendars, so a process may keep them
-- parsed between ticket commands (handlers/ticket_state.py). Every write of a policy
-- or a calendar (projections/sla_policies.sql put_policy, put_calendar) gives the
-- tenant's row a new value, in the writing transaction; a ticket command reads it in
-- the statement that reads its state, and parses the policies again only when it is
-- not the revision the process holds them at. A change is so seen by the very next
-- command in every process, with no expiry to wait for.
--
-- The values come from one sequence rather than a count per tenant: a sequence never
-- hands out a value twice, not even to a transaction that rolls back, so one revision
-- names one set of policies for good. No row: nothing written since this migration
-- (revision 0, the policies as they were before it).
CREATE SEQUENCE sla_policy_revision;
GRANT USAGE ON SEQUENCE sla_policy_revision TO helpdesk_runtime;

CREATE TABLE sla_policy_revisions (
    tenant_id  uuid PRIMARY KEY REFERENCES tenants (id),
    revision   bigint NOT NULL CHECK (revision >= 1)
);

ALTER TABLE sla_policy_revisions ENABLE ROW LEVEL SECURITY;
ALTER TABLE sla_policy_revisions FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON sla_policy_revisions
    USING (tenant_id = nullif(current_setting('app.tenant_id', true), '')::uuid)
    WITH CHECK (tenant_id = nullif(current_setting('app.tenant_id', true), '')::uuid);
GRANT SELECT, INSERT, UPDATE ON sla_policy_revisions TO helpdesk_runtime;
