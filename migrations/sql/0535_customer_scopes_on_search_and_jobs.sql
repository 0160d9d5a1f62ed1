-- The last two tables from which a portal contact or a widget session could read
-- other tickets, or the words of internal notes (tests/integration/
-- test_customer_scope_catalog.py): the search index and the job queue.
--
-- search_documents: a ticket's staff vector holds its internal notes' words, even on
-- the customer's own ticket, so customers and widget sessions read no row of it at all
-- (no portal or widget query searches). Their transactions still write it: a
-- customer's reply is indexed, a ticket they open too, and the contact a widget
-- opening creates. Those three statements move into functions that clear the actor
-- kind while they run, as index_ticket_documents does (0461), so only the tenant
-- policy applies to what they read and write (an insert that may update, as these do,
-- must otherwise pass the reading policies too).
--
-- jobs: SLA timers name their ticket in their payload. A customer's transaction reads
-- (and moves, and cancels) only the timers of tickets it can see, by the tickets
-- policies; it reads no other job. Inserting is not narrowed: the webhook trigger
-- enqueues deliveries of a customer's events in the customer's own transaction.

CREATE FUNCTION index_new_ticket(p_tenant uuid, p_ticket uuid, p_subject text, p_tags text[],
                                 p_name text, p_email text, p_body text)
RETURNS void
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, public
AS $$
DECLARE
    acting text := current_setting('app.actor_kind', true);
    cfg regconfig := coalesce((SELECT settings ->> 'text_search' FROM tenant_settings
                                WHERE tenant_id = p_tenant), 'simple')::regconfig;
BEGIN
    PERFORM set_config('app.actor_kind', '', true);
    INSERT INTO search_documents (tenant_id, kind, id, document, staff_document)
    SELECT p_tenant, 'ticket', p_ticket, v.head || v.body, v.head || v.body
      FROM (SELECT setweight(to_tsvector(cfg, p_subject), 'A')
                   || setweight(to_tsvector(cfg, array_to_string(p_tags, ' ')
                                            || ' ' || coalesce(p_name, '')
                                            || ' ' || coalesce(p_email, '')), 'B') AS head,
                   setweight(to_tsvector(cfg, p_body), 'C') AS body) v
    ON CONFLICT (tenant_id, kind, id) DO UPDATE
       SET document = EXCLUDED.document, staff_document = EXCLUDED.staff_document;
    PERFORM set_config('app.actor_kind', coalesce(acting, ''), true);
END
$$;

CREATE FUNCTION index_ticket_message(p_tenant uuid, p_ticket uuid, p_body text,
                                     p_public boolean)
RETURNS void
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, public
AS $$
DECLARE
    acting text := current_setting('app.actor_kind', true);
    v tsvector := setweight(to_tsvector(coalesce(
        (SELECT settings ->> 'text_search' FROM tenant_settings WHERE tenant_id = p_tenant),
        'simple')::regconfig, p_body), 'C');
BEGIN
    PERFORM set_config('app.actor_kind', '', true);
    UPDATE search_documents s
       SET document = CASE WHEN p_public THEN s.document || v ELSE s.document END,
           staff_document = s.staff_document || v
     WHERE s.tenant_id = p_tenant AND s.kind = 'ticket' AND s.id = p_ticket;
    PERFORM set_config('app.actor_kind', coalesce(acting, ''), true);
END
$$;

CREATE FUNCTION index_contact_documents(p_tenant uuid, p_ids uuid[], p_config text)
RETURNS void
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, public
AS $$
DECLARE
    acting text := current_setting('app.actor_kind', true);
    cfg regconfig := coalesce(p_config, (SELECT settings ->> 'text_search' FROM tenant_settings
                                          WHERE tenant_id = p_tenant), 'simple')::regconfig;
BEGIN
    PERFORM set_config('app.actor_kind', '', true);
    INSERT INTO search_documents (tenant_id, kind, id, document, staff_document)
    SELECT c.tenant_id, 'contact', c.id, v.doc, v.doc
      FROM contacts c
     CROSS JOIN LATERAL (
           SELECT setweight(to_tsvector(cfg, concat_ws(' ', c.name, c.email,
                      translate(c.email, '@.+_-', '     '))), 'A')
                  || setweight(to_tsvector(cfg, concat_ws(' ', c.phone,
                      regexp_replace(c.phone, '[^0-9]', '', 'g'))), 'B') AS doc) v
     WHERE c.tenant_id = p_tenant AND c.id = ANY (p_ids) AND c.merged_into IS NULL
    ON CONFLICT (tenant_id, kind, id) DO UPDATE
       SET document = EXCLUDED.document, staff_document = EXCLUDED.staff_document;
    PERFORM set_config('app.actor_kind', coalesce(acting, ''), true);
END
$$;

REVOKE ALL ON FUNCTION index_contact_documents(uuid, uuid[], text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION index_contact_documents(uuid, uuid[], text) TO helpdesk_runtime;
REVOKE ALL ON FUNCTION index_new_ticket(uuid, uuid, text, text[], text, text, text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION index_new_ticket(uuid, uuid, text, text[], text, text, text)
    TO helpdesk_runtime;
REVOKE ALL ON FUNCTION index_ticket_message(uuid, uuid, text, boolean) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION index_ticket_message(uuid, uuid, text, boolean) TO helpdesk_runtime;

-- For the runtime role only: searches run as the owner (search_matches, 0350), and a
-- restrictive policy over them would keep the planner from using the text match as an
-- index condition (tests/integration/test_search_index.py).
CREATE POLICY customer_scope ON search_documents AS RESTRICTIVE FOR SELECT TO helpdesk_runtime
    USING (current_setting('app.actor_kind', true) IS DISTINCT FROM 'customer'
           AND current_setting('app.actor_kind', true) IS DISTINCT FROM 'widget');

CREATE POLICY customer_scope ON jobs AS RESTRICTIVE FOR SELECT TO helpdesk_runtime
    USING ((current_setting('app.actor_kind', true) IS DISTINCT FROM 'customer'
            AND current_setting('app.actor_kind', true) IS DISTINCT FROM 'widget')
           OR CASE WHEN payload ? 'ticket_id'
                   THEN EXISTS (SELECT 1 FROM tickets t
                                 WHERE t.tenant_id = jobs.tenant_id
                                   AND t.id = (jobs.payload ->> 'ticket_id')::uuid)
                   ELSE false END);
