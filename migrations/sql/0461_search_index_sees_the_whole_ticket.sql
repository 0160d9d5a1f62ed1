-- A ticket's search vectors are recomputed from its rows in the command's own
-- transaction (projections/search.py). When that transaction acts as a customer (the
-- portal), the contact_scope policies of 0460 hide internal notes from it, and the
-- recomputed staff vector would lose them: a customer's reply made internal notes
-- unsearchable for staff. The statement moves into a function that clears the actor
-- kind while it runs and puts it back after, so only the tenant policy applies to what
-- it reads (a function's own SET clause cannot name app.* settings here: Postgres
-- refuses placeholder parameters there to non-superusers). It returns nothing, so a
-- customer learns nothing by calling it, and it writes only index rows computed from
-- the rows as they are.

CREATE FUNCTION index_ticket_documents(p_tenant uuid, p_ids uuid[], p_config regconfig)
RETURNS void
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, public
AS $$
DECLARE
    acting text := current_setting('app.actor_kind', true);
BEGIN
    PERFORM set_config('app.actor_kind', '', true);
INSERT INTO search_documents (tenant_id, kind, id, document, staff_document)
SELECT t.tenant_id, 'ticket', t.id, head || public_bodies, head || public_bodies || notes
  FROM tickets t
 CROSS JOIN LATERAL (
       SELECT setweight(to_tsvector(p_config, t.subject), 'A')
              || setweight(to_tsvector(p_config, array_to_string(t.tags, ' ')
                                       || ' ' || coalesce(t.requester ->> 'name', '')
                                       || ' ' || coalesce(t.requester ->> 'email', '')), 'B')
              AS head) h
 CROSS JOIN LATERAL (
       SELECT setweight(to_tsvector(p_config, coalesce(
                  string_agg(m.body, ' ') FILTER (WHERE m.visibility = 'public'), '')), 'C')
                  AS public_bodies,
              setweight(to_tsvector(p_config, coalesce(
                  string_agg(m.body, ' ') FILTER (WHERE m.visibility <> 'public'), '')), 'C')
                  AS notes
         FROM messages m
        WHERE m.tenant_id = t.tenant_id AND m.ticket_id = t.id) b
 WHERE t.tenant_id = p_tenant AND t.id = ANY (p_ids)
ON CONFLICT (tenant_id, kind, id) DO UPDATE
   SET document = EXCLUDED.document, staff_document = EXCLUDED.staff_document;
    PERFORM set_config('app.actor_kind', coalesce(acting, ''), true);
END
$$;

REVOKE ALL ON FUNCTION index_ticket_documents(uuid, uuid[], regconfig) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION index_ticket_documents(uuid, uuid[], regconfig) TO helpdesk_runtime;
