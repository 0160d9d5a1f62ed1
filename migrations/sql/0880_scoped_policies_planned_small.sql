-- The scoped policies of messages, tickets, search_documents, ticket_versions and jobs
-- (0460, 0470, 0535, 0600, 0640) ask the same questions as before, each through a
-- function, as 0870 did for files: does the caller see this ticket, is it the acting
-- contact's, does the acting widget session hold it (or the ticket it follows up).
-- Written inline as EXISTS, each subquery brought the policies of the table it reads
-- into the statement's plan, and theirs the next: an INSERT INTO messages planned the
-- tickets policies under its contact and widget scopes, and the widget_tickets policy
-- under those. Where a statement is planned at every call (behind PgBouncer, with no
-- prepared statements; a connection's first executions), that planning was the largest
-- part of a write's Postgres CPU (docs/performance.md, "Policy planning in the write
-- path"). A PL/pgSQL function is not inlined: the statement's plan holds a call, and the
-- function's own query is planned once per connection and kept.
--
-- Nothing else changes. The functions run as the caller (no SECURITY DEFINER), so the
-- tables they read answer under the caller's own policies, as the subqueries did;
-- names are schema-qualified (as in 0870) rather than pinned with SET search_path, which
-- would cost a configuration change at every call. Each call stays behind the same
-- first test in its OR (`actor_kind IS DISTINCT FROM ...`, or the group scope's), so a
-- staff member's statement evaluates none of the calls in contact and widget scopes.

CREATE FUNCTION contact_sees_ticket(p_tenant uuid, p_ticket uuid) RETURNS boolean
    LANGUAGE plpgsql STABLE PARALLEL SAFE AS $$
BEGIN
    RETURN EXISTS (SELECT 1 FROM public.tickets t
                    WHERE t.tenant_id = p_tenant AND t.id = p_ticket
                      AND t.contact_id = public.acting_contact());
END
$$;

-- A ticket the acting widget session holds, itself or as the ticket it follows up.
CREATE FUNCTION widget_sees_ticket(p_tenant uuid, p_ticket uuid) RETURNS boolean
    LANGUAGE plpgsql STABLE PARALLEL SAFE AS $$
BEGIN
    RETURN EXISTS (SELECT 1 FROM public.tickets t
                     JOIN public.widget_tickets w
                       ON w.tenant_id = t.tenant_id
                      AND (w.ticket_id = t.id OR w.ticket_id = t.follow_up_of)
                    WHERE t.tenant_id = p_tenant AND t.id = p_ticket
                      AND w.session_id = public.acting_widget_session());
END
$$;

-- The same question asked of a tickets row itself, from its id and follow_up_of.
CREATE FUNCTION widget_holds(p_tenant uuid, p_ticket uuid, p_follow_up_of uuid)
    RETURNS boolean
    LANGUAGE plpgsql STABLE PARALLEL SAFE AS $$
BEGIN
    RETURN EXISTS (SELECT 1 FROM public.widget_tickets w
                    WHERE w.tenant_id = p_tenant
                      AND w.session_id = public.acting_widget_session()
                      AND w.ticket_id = ANY (ARRAY[p_ticket, p_follow_up_of]));
END
$$;

DROP POLICY contact_scope ON messages;
CREATE POLICY contact_scope ON messages AS RESTRICTIVE
    USING (current_setting('app.actor_kind', true) IS DISTINCT FROM 'customer'
           OR (visibility = 'public' AND contact_sees_ticket(tenant_id, ticket_id)));

DROP POLICY widget_scope ON messages;
CREATE POLICY widget_scope ON messages AS RESTRICTIVE
    USING (current_setting('app.actor_kind', true) IS DISTINCT FROM 'widget'
           OR (visibility = 'public' AND widget_sees_ticket(tenant_id, ticket_id)));

DROP POLICY group_scope ON messages;
CREATE POLICY group_scope ON messages AS RESTRICTIVE FOR SELECT TO helpdesk_runtime
    USING ((SELECT acting_agent_scope() IS NULL) IS DISTINCT FROM false
           OR sees_ticket(tenant_id, ticket_id));

DROP POLICY widget_scope ON tickets;
CREATE POLICY widget_scope ON tickets AS RESTRICTIVE
    USING (current_setting('app.actor_kind', true) IS DISTINCT FROM 'widget'
           OR widget_holds(tenant_id, id, follow_up_of));

DROP POLICY group_scope ON search_documents;
CREATE POLICY group_scope ON search_documents AS RESTRICTIVE FOR SELECT TO helpdesk_runtime
    USING ((SELECT acting_agent_scope() IS NULL) IS DISTINCT FROM false
           OR kind <> 'ticket'
           OR sees_ticket(tenant_id, id));

DROP POLICY group_scope ON ticket_versions;
CREATE POLICY group_scope ON ticket_versions AS RESTRICTIVE FOR SELECT TO helpdesk_runtime
    USING ((SELECT acting_agent_scope() IS NULL) IS DISTINCT FROM false
           OR sees_ticket(tenant_id, id));

DROP POLICY customer_scope ON jobs;
CREATE POLICY customer_scope ON jobs AS RESTRICTIVE FOR SELECT TO helpdesk_runtime
    USING ((current_setting('app.actor_kind', true) IS DISTINCT FROM 'customer'
            AND current_setting('app.actor_kind', true) IS DISTINCT FROM 'widget')
           OR CASE WHEN payload ? 'ticket_id'
                   THEN sees_ticket(tenant_id, (payload ->> 'ticket_id')::uuid)
                   ELSE false END);
