-- Group-scoped access (docs/teamwork.md): with the tenant setting
-- `group_scoped_access` on, a transaction acting as an agent (an agent-role key that
-- acts as an agent, or an agent signed in) sees the tickets of its groups, the tickets
-- in no group, and the tickets assigned to it; their messages, their streams' events,
-- their files and their search documents; and nothing of any other ticket. Admins,
-- auditors, analysts, intake keys, customers, widget sessions, rules and the scheduler
-- keep what they had. Like the customer's scope (0460), it is derived from the armed
-- actor, never armed apart, so nothing acts as an agent unscoped; and it is read from
-- the tables at every statement, so turning the setting on or off or changing a
-- group's members holds from the next statement on.
--
-- acting_agent_scope(): NULL when the transaction is not scoped; else an array whose
-- first element is the acting agent and whose others are the groups it is a member
-- of. (One array rather than two functions: each policy asks for it once, as an
-- InitPlan, so it is computed once per statement, not per row.) An agent-role key
-- without an agent (barred at the edge anyway) gets no agent and no group: the
-- tickets in no group only, never the whole tenant.
CREATE FUNCTION acting_agent_scope() RETURNS uuid[]
LANGUAGE plpgsql STABLE PARALLEL SAFE
SET search_path = pg_catalog, public
AS $$
DECLARE
    v_kind text := current_setting('app.actor_kind', true);
    v_who text := nullif(current_setting('app.actor_id', true), '');
    v_tenant uuid := nullif(current_setting('app.tenant_id', true), '')::uuid;
    v_agent uuid;
    v_role text;
BEGIN
    -- Cheapest first: most transactions are no agent's, or of a tenant with the
    -- setting off, and stop after one lookup at most.
    IF v_kind IS DISTINCT FROM 'agent' AND v_kind IS DISTINCT FROM 'api_key' THEN
        RETURN NULL;
    END IF;
    IF NOT coalesce((SELECT (s.settings ->> 'group_scoped_access')::boolean
                       FROM tenant_settings s WHERE s.tenant_id = v_tenant), false) THEN
        RETURN NULL;
    END IF;
    IF v_kind = 'agent' THEN
        v_agent := v_who::uuid;
        SELECT a.role INTO v_role FROM agents a WHERE a.tenant_id = v_tenant AND a.id = v_agent;
    ELSE
        SELECT k.role, k.agent_id INTO v_role, v_agent
          FROM api_keys k WHERE k.tenant_id = v_tenant AND k.id = v_who::uuid;
    END IF;
    IF v_role IS DISTINCT FROM 'agent' THEN
        RETURN NULL;
    END IF;
    IF v_agent IS NULL THEN
        RETURN ARRAY['00000000-0000-0000-0000-000000000000'::uuid];
    END IF;
    RETURN v_agent || coalesce((SELECT array_agg(g.id) FROM groups g
                                 WHERE g.tenant_id = v_tenant AND v_agent = ANY (g.members)),
                                '{}'::uuid[]);
END
$$;

REVOKE ALL ON FUNCTION acting_agent_scope() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION acting_agent_scope() TO helpdesk_runtime;

-- Whether a ticket (its group and assignee) is in a scope as acting_agent_scope()
-- gives it, never NULL (agent_reads_stream negates it). In plpgsql, a plain expression
-- evaluated per row: a SQL function would be inlined, but not here, where its scope
-- argument is a sub-select used three times, and run through the SQL function
-- executor per row instead (about 0.1 ms a row, measured on the ticket list).
CREATE FUNCTION ticket_in_scope(p_scope uuid[], p_group uuid, p_assignee uuid)
RETURNS boolean
LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE COST 1
AS $$
BEGIN
    RETURN p_scope IS NULL OR p_group IS NULL OR p_group = ANY (p_scope[2:])
           OR coalesce(p_assignee = p_scope[1], false);
END
$$;

-- The policies are for the runtime role only: the SECURITY DEFINER functions below
-- (run as the owner) look at the tickets outside the scope to tell a ticket stream
-- that is hidden from a stream that is no ticket's.
--
-- Reading tickets, and locking or updating one (a command loads its state FOR UPDATE),
-- is narrowed. An agent may hand a ticket to a group it is not a member of (and then
-- no longer sees it): an UPDATE that reads the row checks the new row against the
-- reading policy too, so a ticket the transaction found in its scope, by the state
-- loads of handlers/ticket_state.sql, is marked (ticket_loaded) and stays visible to
-- that transaction. The mark is transaction-local and set only on a row that was
-- visible; like app.appending it is armed by the service's own statements.
--
-- The function marks only a ticket the caller can see (the EXISTS reads under the
-- caller's own policies), so calling it by hand reveals nothing; what it cannot stop,
-- like any scope derived from the armed actor, is SQL that arms settings itself.
CREATE FUNCTION ticket_loaded(p_ticket uuid) RETURNS boolean
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, public
AS $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM tickets t
                    WHERE t.tenant_id = nullif(current_setting('app.tenant_id', true), '')::uuid
                      AND t.id = p_ticket) THEN
        RETURN false;
    END IF;
    PERFORM set_config('app.loaded_tickets',
                       coalesce(current_setting('app.loaded_tickets', true), '')
                       || p_ticket::text || ' ', true);
    RETURN true;
END
$$;

REVOKE ALL ON FUNCTION ticket_loaded(uuid) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION ticket_loaded(uuid) TO helpdesk_runtime;

--
-- Every policy opens with "(scope IS NULL) IS DISTINCT FROM false", true when the
-- transaction is not scoped, for the planner's sake as 0460 explains: it estimates
-- that true for nearly every row (0.995), where a function's result or a bare
-- IS NULL is guessed far lower, and with the lower guess a filtered ticket list left
-- its keyset index walk for a sort (tests/integration/test_list_plans.py). At run
-- time it is one InitPlan, and the branches after it are not evaluated.
CREATE POLICY group_scope ON tickets AS RESTRICTIVE FOR SELECT TO helpdesk_runtime
    USING ((SELECT acting_agent_scope() IS NULL) IS DISTINCT FROM false
           OR ticket_in_scope((SELECT acting_agent_scope()), group_id, assignee)
           OR strpos(current_setting('app.loaded_tickets', true), id::text) > 0);
CREATE POLICY group_scope_update ON tickets AS RESTRICTIVE FOR UPDATE TO helpdesk_runtime
    USING ((SELECT acting_agent_scope() IS NULL) IS DISTINCT FROM false
           OR ticket_in_scope((SELECT acting_agent_scope()), group_id, assignee)
           OR strpos(current_setting('app.loaded_tickets', true), id::text) > 0)
    WITH CHECK (true);

-- A message, a file or a search document of a ticket: visible when its ticket is
-- (the EXISTS reads tickets under the policy above).
CREATE POLICY group_scope ON messages AS RESTRICTIVE FOR SELECT TO helpdesk_runtime
    USING ((SELECT acting_agent_scope() IS NULL) IS DISTINCT FROM false
           OR EXISTS (SELECT 1 FROM tickets t
                       WHERE t.tenant_id = messages.tenant_id AND t.id = messages.ticket_id));
CREATE POLICY group_scope ON uploads AS RESTRICTIVE FOR SELECT TO helpdesk_runtime
    USING ((SELECT acting_agent_scope() IS NULL) IS DISTINCT FROM false OR ticket_id IS NULL
           OR EXISTS (SELECT 1 FROM tickets t
                       WHERE t.tenant_id = uploads.tenant_id AND t.id = uploads.ticket_id));
CREATE POLICY group_scope ON search_documents AS RESTRICTIVE FOR SELECT TO helpdesk_runtime
    USING ((SELECT acting_agent_scope() IS NULL) IS DISTINCT FROM false OR kind <> 'ticket'
           OR EXISTS (SELECT 1 FROM tickets t
                       WHERE t.tenant_id = search_documents.tenant_id
                         AND t.id = search_documents.id));

-- Search matches are found by search_matches() (0350), as the owner, and then joined
-- to `tickets` under the policy above: a match outside the scope has no row to join.
--
-- Events: of a ticket stream, only those of a ticket in the scope; every other stream
-- as before. The check runs as the owner, where the scope's policy does not apply, so
-- a hidden ticket is found and its stream refused (under the runtime role a hidden
-- ticket's row does not exist, and its stream would look like no ticket's). While
-- append_events runs (app.appending, 0463) everything passes: an append reads the
-- stream's version and returns what it inserted.
CREATE FUNCTION agent_reads_stream(p_scope uuid[], p_tenant uuid, p_stream uuid)
RETURNS boolean
LANGUAGE plpgsql STABLE PARALLEL SAFE COST 1 SECURITY DEFINER
SET search_path = pg_catalog, public
AS $$
BEGIN
    IF p_scope IS NULL OR current_setting('app.appending', true) = 'on' THEN
        RETURN true;
    END IF;
    RETURN NOT EXISTS (SELECT 1 FROM tickets t
                        WHERE t.tenant_id = p_tenant AND t.id = p_stream
                          AND NOT ticket_in_scope(p_scope, t.group_id, t.assignee));
END
$$;

REVOKE ALL ON FUNCTION agent_reads_stream(uuid[], uuid, uuid) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION agent_reads_stream(uuid[], uuid, uuid) TO helpdesk_runtime;

CREATE POLICY group_scope ON events AS RESTRICTIVE FOR SELECT TO helpdesk_runtime
    USING ((SELECT acting_agent_scope() IS NULL) IS DISTINCT FROM false
           OR agent_reads_stream((SELECT acting_agent_scope()), tenant_id, stream_id));
