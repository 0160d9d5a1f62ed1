-- The scoped policies of files (0540, 0600) ask the same questions as before, each
-- through a function: does the caller see this ticket, an upload of this blob, this
-- blob. Written inline as EXISTS, each subquery brought the policies of the table it
-- reads into the plan, and theirs the next: the plan of an UPDATE of one file_blobs row
-- held its SELECT and UPDATE policies, the uploads policies of each, and the tickets
-- (and widget_tickets) policies of those, and it was planned again at every execution
-- (17-27 ms of planning on the bench's machine, against 0.4 ms for an UPDATE of one
-- tickets row; docs/performance.md, "A message with a file"). A PL/pgSQL function is not
-- inlined: the statement's plan holds a call, and the function's own query is planned
-- once per connection and kept.
--
-- Nothing else changes. The functions run as the caller (no SECURITY DEFINER), so the
-- tables they read answer under the caller's own policies, as the subqueries did; and
-- the calls come after `NOT acting_scoped()` (or the group scope's test) in an OR, so a
-- staff member's statement evaluates none of them.

CREATE FUNCTION sees_ticket(p_tenant uuid, p_ticket uuid) RETURNS boolean
    LANGUAGE plpgsql STABLE PARALLEL SAFE AS $$
BEGIN
    RETURN EXISTS (SELECT 1 FROM public.tickets t
                    WHERE t.tenant_id = p_tenant AND t.id = p_ticket);
END
$$;

CREATE FUNCTION sees_upload_of(p_tenant uuid, p_blob uuid) RETURNS boolean
    LANGUAGE plpgsql STABLE PARALLEL SAFE AS $$
BEGIN
    RETURN EXISTS (SELECT 1 FROM public.uploads u
                    WHERE u.tenant_id = p_tenant AND u.blob_id = p_blob);
END
$$;

CREATE FUNCTION sees_blob(p_tenant uuid, p_blob uuid) RETURNS boolean
    LANGUAGE plpgsql STABLE PARALLEL SAFE AS $$
BEGIN
    RETURN EXISTS (SELECT 1 FROM public.file_blobs b
                    WHERE b.tenant_id = p_tenant AND b.id = p_blob);
END
$$;

DROP POLICY customer_scope ON uploads;
CREATE POLICY customer_scope ON uploads AS RESTRICTIVE
    USING (NOT acting_scoped()
           OR (ticket_id IS NULL
               AND uploaded_by_kind = current_setting('app.actor_kind', true)
               AND uploaded_by_id = current_setting('app.actor_id', true))
           OR (visibility = 'public' AND sees_ticket(tenant_id, ticket_id)));

DROP POLICY group_scope ON uploads;
CREATE POLICY group_scope ON uploads AS RESTRICTIVE FOR SELECT TO helpdesk_runtime
    USING ((SELECT acting_agent_scope() IS NULL) IS DISTINCT FROM false OR ticket_id IS NULL
           OR sees_ticket(tenant_id, ticket_id));

DROP POLICY customer_scope_read ON file_blobs;
CREATE POLICY customer_scope_read ON file_blobs AS RESTRICTIVE FOR SELECT
    USING (NOT acting_scoped()
           OR (created_by_kind = current_setting('app.actor_kind', true)
               AND created_by_id = current_setting('app.actor_id', true))
           OR sees_upload_of(tenant_id, id));
DROP POLICY customer_scope_update ON file_blobs;
CREATE POLICY customer_scope_update ON file_blobs AS RESTRICTIVE FOR UPDATE
    USING (NOT acting_scoped()
           OR (created_by_kind = current_setting('app.actor_kind', true)
               AND created_by_id = current_setting('app.actor_id', true))
           OR sees_upload_of(tenant_id, id));

DROP POLICY customer_scope_read ON file_chunks;
CREATE POLICY customer_scope_read ON file_chunks AS RESTRICTIVE FOR SELECT
    USING (NOT acting_scoped() OR sees_blob(tenant_id, blob_id));
