-- A merge's target is found by the words of the tickets merged into it (0911), but under
-- group-scoped access its thread shows an agent only the messages of those it may see:
-- a merged ticket outside the agent's scope has its messages left out (the messages
-- policy, 0880). Matching the index row alone, the agent found the target by a hidden
-- ticket's words, and so learnt what that ticket says (a query naming a word of it and
-- one of the target's answered yes or no). Now a match of such a target, for a scoped
-- caller only, is tested again against the vectors of what its thread shows the caller,
-- and ranked by them: found by the words it can read, never by the others, and never
-- ranked by them either.
--
-- The vectors of a ticket are made in one place, ticket_search_vectors, for the index
-- (index_ticket_documents reads every message, outside any scope, as since 0461) and for
-- the test (it reads the messages the caller's policies show). Nothing changes for a
-- caller who is not scoped, nor for a ticket nothing was merged into, nor for a target
-- whose merged tickets the caller all sees: their match is the index's, as before. The
-- cost is one look-up of the matched ticket per match of a scoped agent's search, and
-- the vectors made again for the few targets with a hidden merged ticket.

-- A ticket's two vectors (0911's, unchanged): the subject, tags and requester, then the
-- bodies of the messages of the tickets merged into it (in merge order, then version)
-- and its own (in version order); `document` of public messages, `staff_document` of
-- all. Messages are read under the caller's policies. Schema-qualified names rather
-- than a pinned search_path, as 0880 explains.
CREATE FUNCTION ticket_search_vectors(p_tenant uuid, p_id uuid, p_subject text,
                                      p_tags text[], p_requester jsonb, p_merged jsonb,
                                      p_config regconfig,
                                      OUT document tsvector, OUT staff_document tsvector)
LANGUAGE sql STABLE
AS $$
SELECT h.head || b.public_bodies, h.head || b.all_bodies
  FROM (SELECT setweight(to_tsvector(p_config, p_subject), 'A')
               || setweight(to_tsvector(p_config, array_to_string(p_tags, ' ')
                                        || ' ' || coalesce(p_requester ->> 'name', '')
                                        || ' ' || coalesce(p_requester ->> 'email', '')), 'B')
               AS head) h
 CROSS JOIN LATERAL (
       SELECT coalesce(public.tsvector_concat_agg(v.body ORDER BY v.place, v.version)
                           FILTER (WHERE v.visibility = 'public'), '') AS public_bodies,
              coalesce(public.tsvector_concat_agg(v.body ORDER BY v.place, v.version), '')
                  AS all_bodies
         FROM (SELECT coalesce(k.place, 2147483647) AS place, m.version, m.visibility,
                      setweight(to_tsvector(p_config, m.body), 'C') AS body
                 FROM public.messages m
                 LEFT JOIN LATERAL (
                      SELECT f.place::int AS place
                        FROM jsonb_array_elements_text(coalesce(p_merged, '[]'))
                             WITH ORDINALITY AS f(id, place)
                       WHERE f.id::uuid = m.ticket_id) k ON true
                WHERE m.tenant_id = p_tenant
                  AND m.ticket_id = ANY (array_prepend(p_id, ARRAY(
                          SELECT jsonb_array_elements_text(coalesce(p_merged, '[]'))::uuid)))
              ) v) b
$$;
REVOKE ALL ON FUNCTION ticket_search_vectors(uuid, uuid, text, text[], jsonb, jsonb, regconfig)
    FROM PUBLIC;
GRANT EXECUTE ON FUNCTION ticket_search_vectors(uuid, uuid, text, text[], jsonb, jsonb,
                                                regconfig) TO helpdesk_runtime;

CREATE OR REPLACE FUNCTION index_ticket_documents(p_tenant uuid, p_ids uuid[], p_config regconfig)
RETURNS void
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, public
AS $$
DECLARE
    acting text := current_setting('app.actor_kind', true);
BEGIN
    PERFORM set_config('app.actor_kind', '', true);
INSERT INTO search_documents (tenant_id, kind, id, document, staff_document)
SELECT t.tenant_id, 'ticket', t.id, v.document, v.staff_document
  FROM tickets t
 CROSS JOIN LATERAL ticket_search_vectors(t.tenant_id, t.id, t.subject, t.tags, t.requester,
                                          t.state_json -> 'merged_from', p_config) v
 WHERE t.tenant_id = p_tenant AND t.id = ANY (p_ids)
ON CONFLICT (tenant_id, kind, id) DO UPDATE
   SET document = EXCLUDED.document, staff_document = EXCLUDED.staff_document;
    PERFORM set_config('app.actor_kind', coalesce(acting, ''), true);
END
$$;

-- The vector of ticket `p_id` as its thread shows the caller, when that differs from its
-- index row: a ticket the caller sees, with a ticket merged into it that the caller does
-- not. NULL otherwise (the index row holds what the caller may read).
CREATE FUNCTION seen_search_vector(p_id uuid, p_config regconfig, p_staff boolean)
RETURNS tsvector
LANGUAGE plpgsql STABLE PARALLEL SAFE
AS $$
DECLARE
    v_tenant uuid := nullif(current_setting('app.tenant_id', true), '')::uuid;
    t record;
    v record;
BEGIN
    SELECT k.id, k.subject, k.tags, k.requester, k.state_json -> 'merged_from' AS merged
      INTO t FROM public.tickets k WHERE k.tenant_id = v_tenant AND k.id = p_id;
    IF NOT FOUND OR coalesce(jsonb_array_length(t.merged), 0) = 0
       OR NOT EXISTS (SELECT 1 FROM jsonb_array_elements_text(t.merged) f(id)
                       WHERE NOT EXISTS (SELECT 1 FROM public.tickets s
                                          WHERE s.tenant_id = v_tenant
                                            AND s.id = f.id::uuid)) THEN
        RETURN NULL;
    END IF;
    SELECT * INTO v FROM public.ticket_search_vectors(v_tenant, t.id, t.subject, t.tags,
                                                      t.requester, t.merged, p_config);
    RETURN CASE WHEN p_staff THEN v.staff_document ELSE v.document END;
END
$$;
REVOKE ALL ON FUNCTION seen_search_vector(uuid, regconfig, boolean) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION seen_search_vector(uuid, regconfig, boolean) TO helpdesk_runtime;

-- The ticket matches of a search, as search_matches finds them, each tested again and
-- ranked by what the caller reads when that differs (above). For a caller who is not
-- scoped the scope's InitPlan is NULL and no ticket is looked up.
CREATE FUNCTION ticket_search_matches(p_query tsquery, p_config regconfig, p_staff boolean)
RETURNS TABLE (id uuid, rank real)
LANGUAGE sql STABLE
AS $$
SELECT m.id, coalesce(ts_rank(s.vector, p_query), m.rank)
  FROM public.search_matches('ticket', p_query, p_staff) m
  LEFT JOIN LATERAL (SELECT public.seen_search_vector(m.id, p_config, p_staff) AS vector
                      WHERE (SELECT public.acting_agent_scope()) IS NOT NULL) s ON true
 WHERE s.vector IS NULL OR s.vector @@ p_query
$$;
REVOKE ALL ON FUNCTION ticket_search_matches(tsquery, regconfig, boolean) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION ticket_search_matches(tsquery, regconfig, boolean)
    TO helpdesk_runtime;
