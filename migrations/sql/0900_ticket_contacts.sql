-- The contacts a ticket is read by in the portal: its requester, the customers it
-- copies (CCs), and, on a ticket merged into another, the requester and CCs of that
-- target (role 'merged': the target's thread lists the source's messages). Written by
-- the inline projection of tickets (projections/inline.py) in the command's own
-- transaction whenever a ticket's requester or CCs change, and backfilled here.
--
-- Why a table: the CCs live in the ticket's state_json, and a policy asking "is the
-- acting contact among them" with jsonb containment could not use an index for the
-- query's own condition under row-level security (jsonb @> is not leakproof), so the
-- portal's list scanned the tenant's tickets. A uuid equality on this table's
-- (tenant_id, contact_id, ticket_id) index is one index probe per ticket.

CREATE TABLE ticket_contacts (
    tenant_id   uuid NOT NULL REFERENCES tenants (id),
    ticket_id   uuid NOT NULL,
    contact_id  uuid NOT NULL,
    role        text NOT NULL CHECK (role IN ('requester', 'cc', 'merged')),
    PRIMARY KEY (tenant_id, ticket_id, contact_id, role),
    FOREIGN KEY (tenant_id, ticket_id) REFERENCES tickets (tenant_id, id)
);
CREATE INDEX ticket_contacts_contact ON ticket_contacts (tenant_id, contact_id, ticket_id);

ALTER TABLE ticket_contacts ENABLE ROW LEVEL SECURITY;
ALTER TABLE ticket_contacts FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON ticket_contacts
    USING (tenant_id = nullif(current_setting('app.tenant_id', true), '')::uuid)
    WITH CHECK (tenant_id = nullif(current_setting('app.tenant_id', true), '')::uuid);
-- A portal contact reads its own rows only; a widget session reads none (it holds
-- tickets by widget_tickets, not by contact). For reads only: the rows are written by
-- the service's projection of the tickets a command changes, which the ticket scopes
-- already confine, and a customer's own opening writes its requester row.
CREATE POLICY contact_scope ON ticket_contacts AS RESTRICTIVE FOR SELECT
    USING (current_setting('app.actor_kind', true) IS DISTINCT FROM 'customer'
           OR contact_id = acting_contact());
CREATE POLICY widget_scope ON ticket_contacts AS RESTRICTIVE FOR SELECT
    USING (current_setting('app.actor_kind', true) IS DISTINCT FROM 'widget');

GRANT SELECT, INSERT, DELETE ON ticket_contacts TO helpdesk_runtime;

-- Whether the acting contact reads this ticket's public messages: as its requester, a
-- CC, or a reader of the ticket it was merged into. Replaces 0880's, which asked the
-- tickets row for its requester.
CREATE OR REPLACE FUNCTION contact_sees_ticket(p_tenant uuid, p_ticket uuid) RETURNS boolean
    LANGUAGE plpgsql STABLE PARALLEL SAFE AS $$
BEGIN
    RETURN EXISTS (SELECT 1 FROM public.ticket_contacts c
                    WHERE c.tenant_id = p_tenant AND c.contact_id = public.acting_contact()
                      AND c.ticket_id = p_ticket);
END
$$;

-- The tickets the acting contact is copied on, in the armed tenant. The tickets policy
-- asks it in a scalar subquery, which Postgres runs once per statement (an InitPlan,
-- and only when a row reaches that branch): asked per row, as contact_sees_ticket is,
-- each ticket a CC lists paid a PL/pgSQL call and an index probe of its own (0.66 ms
-- for a page of 25 against 0.06 ms for the requester's own, bench/portal_list.py).
-- A contact is copied on few tickets, so the array stays short.
CREATE FUNCTION contact_copied_tickets() RETURNS uuid[]
    LANGUAGE plpgsql STABLE PARALLEL SAFE AS $$
BEGIN
    RETURN ARRAY(SELECT c.ticket_id FROM public.ticket_contacts c
                  WHERE c.tenant_id = nullif(current_setting('app.tenant_id', true), '')::uuid
                    AND c.contact_id = public.acting_contact() AND c.role = 'cc');
END
$$;

-- The requester's branch stays the row's own uuid equality, so the portal's list of a
-- requester's tickets walks tickets_contact as before; a CC's tickets are found through
-- ticket_contacts by the list itself (handlers/portal.sql, own_tickets), and each is
-- let through by the array above.
DROP POLICY contact_scope ON tickets;
CREATE POLICY contact_scope ON tickets AS RESTRICTIVE
    USING (current_setting('app.actor_kind', true) IS DISTINCT FROM 'customer'
           OR contact_id = acting_contact()
           OR id = ANY ((SELECT contact_copied_tickets())::uuid[]));

-- The portal's live feed and any events read as a customer: a CC reads the same
-- public events of the ticket as its requester.
CREATE OR REPLACE FUNCTION customer_reads_event(p_tenant uuid, p_stream uuid, p_type text,
                                                p_data jsonb)
RETURNS boolean
LANGUAGE plpgsql STABLE PARALLEL SAFE COST 1
SET search_path = pg_catalog, public
AS $$
BEGIN
    IF current_setting('app.appending', true) = 'on' THEN
        RETURN true;
    END IF;
    RETURN (p_type IN ('TicketOpened', 'StateChanged', 'FollowUpOpened')
            OR (p_type = 'MessageAdded' AND p_data ->> 'visibility' = 'public'))
       AND EXISTS (SELECT 1 FROM ticket_contacts c
                    WHERE c.tenant_id = p_tenant AND c.contact_id = acting_contact()
                      AND c.ticket_id = p_stream AND c.role IN ('requester', 'cc'));
END
$$;

-- The rows of the tickets there are, one tenant at a time (the tables' policies read
-- under the armed tenant only).
DO $$
DECLARE
    v_tenant uuid;
BEGIN
    PERFORM set_config('app.worker', 'on', true);
    FOR v_tenant IN SELECT id FROM tenants ORDER BY id LOOP
        PERFORM set_config('app.tenant_id', v_tenant::text, true);
        INSERT INTO ticket_contacts (tenant_id, ticket_id, contact_id, role)
        SELECT t.tenant_id, t.id, t.contact_id, 'requester'
          FROM tickets t WHERE t.tenant_id = v_tenant AND t.contact_id IS NOT NULL
        UNION
        SELECT t.tenant_id, t.id, (c ->> 'contact_id')::uuid, 'cc'
          FROM tickets t, jsonb_array_elements(coalesce(t.state_json -> 'ccs', '[]')) c
         WHERE t.tenant_id = v_tenant AND c ->> 'contact_id' IS NOT NULL;
        INSERT INTO ticket_contacts (tenant_id, ticket_id, contact_id, role)
        SELECT DISTINCT r.tenant_id, s.id::uuid, r.contact_id, 'merged'
          FROM ticket_contacts r
          JOIN tickets t ON t.tenant_id = r.tenant_id AND t.id = r.ticket_id,
               jsonb_array_elements_text(coalesce(t.state_json -> 'merged_from', '[]')) s(id)
         WHERE r.tenant_id = v_tenant AND r.role IN ('requester', 'cc')
        ON CONFLICT DO NOTHING;
    END LOOP;
    PERFORM set_config('app.tenant_id', '', true);
    PERFORM set_config('app.worker', '', true);
END
$$;
