-- A ticket's search vectors take the messages of the tickets merged into it: its thread
-- lists them (the `merged_from` of its state, list_thread_messages), so a search for
-- their words finds it. The merged ticket keeps its own row, so it is found too, its
-- answer naming where it went (`merged_into`). A merge recomputes the target's
-- vectors (projections/inline.py); the messages of the merged tickets come first, by
-- ticket in merge order and then by version, and the ticket's own after them in
-- version order, so a reply appended later (index_ticket_message) still equals a
-- recomputation (0530). The search row is read under the target's scope (0880): who
-- may see the target finds it by them.
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
SELECT t.tenant_id, 'ticket', t.id, head || public_bodies, head || all_bodies
  FROM tickets t
 CROSS JOIN LATERAL (
       SELECT setweight(to_tsvector(p_config, t.subject), 'A')
              || setweight(to_tsvector(p_config, array_to_string(t.tags, ' ')
                                       || ' ' || coalesce(t.requester ->> 'name', '')
                                       || ' ' || coalesce(t.requester ->> 'email', '')), 'B')
              AS head) h
 CROSS JOIN LATERAL (
       SELECT coalesce(tsvector_concat_agg(v.body ORDER BY v.place, v.version)
                           FILTER (WHERE v.visibility = 'public'), '') AS public_bodies,
              coalesce(tsvector_concat_agg(v.body ORDER BY v.place, v.version), '')
                  AS all_bodies
         FROM (SELECT coalesce(k.place, 2147483647) AS place, m.version, m.visibility,
                      setweight(to_tsvector(p_config, m.body), 'C') AS body
                 FROM messages m
                 LEFT JOIN LATERAL (
                      SELECT f.place::int AS place
                        FROM jsonb_array_elements_text(
                                 coalesce(t.state_json -> 'merged_from', '[]'))
                             WITH ORDINALITY AS f(id, place)
                       WHERE f.id::uuid = m.ticket_id) k ON true
                WHERE m.tenant_id = t.tenant_id
                  AND m.ticket_id = ANY (array_prepend(t.id, ARRAY(
                          SELECT jsonb_array_elements_text(
                                     coalesce(t.state_json -> 'merged_from', '[]'))::uuid)))
              ) v) b
 WHERE t.tenant_id = p_tenant AND t.id = ANY (p_ids)
ON CONFLICT (tenant_id, kind, id) DO UPDATE
   SET document = EXCLUDED.document, staff_document = EXCLUDED.staff_document;
    PERFORM set_config('app.actor_kind', coalesce(acting, ''), true);
END
$$;
