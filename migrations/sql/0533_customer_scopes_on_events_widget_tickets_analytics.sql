-- Three scopes the catalog test (tests/integration/test_customer_scope_catalog.py)
-- found open: a transaction acting as a widget session read every event of the
-- tenant (0470 scoped its tickets and messages, not `events`); one acting as a portal
-- contact read which widget session holds which ticket, of every contact
-- (widget_tickets was scoped for widget sessions only); and either read the analytics
-- row of every ticket. No portal or widget query reads these; row-level security
-- holds whatever SQL runs all the same.

-- A widget session reads from `events` what a customer reads of its own tickets
-- (0463): the ticket opened, its public messages, its state changes and follow-ups, of
-- the tickets the session holds (or that follow up one it holds), and everything while
-- it appends (append_events marks the transaction, as 0463 explains).
CREATE FUNCTION widget_reads_event(p_tenant uuid, p_stream uuid, p_type text, p_data jsonb)
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
       AND EXISTS (SELECT 1 FROM tickets t
                     JOIN widget_tickets w
                       ON w.tenant_id = t.tenant_id AND w.ticket_id IN (t.id, t.follow_up_of)
                    WHERE t.tenant_id = p_tenant AND t.id = p_stream
                      AND w.session_id = acting_widget_session());
END
$$;

REVOKE ALL ON FUNCTION widget_reads_event(uuid, uuid, text, jsonb) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION widget_reads_event(uuid, uuid, text, jsonb) TO helpdesk_runtime;

CREATE POLICY widget_scope ON events AS RESTRICTIVE FOR SELECT
    USING (current_setting('app.actor_kind', true) IS DISTINCT FROM 'widget'
           OR widget_reads_event(tenant_id, stream_id, type, data));

-- A portal contact has no widget sessions of its own to read.
CREATE POLICY contact_scope ON widget_tickets AS RESTRICTIVE
    USING (current_setting('app.actor_kind', true) IS DISTINCT FROM 'customer');

-- Analytics are for staff: written by projectors (never as a customer or a widget
-- session) and read by analysts.
CREATE POLICY customer_scope ON analytics_tickets AS RESTRICTIVE
    USING (current_setting('app.actor_kind', true) IS DISTINCT FROM 'customer'
           AND current_setting('app.actor_kind', true) IS DISTINCT FROM 'widget');
