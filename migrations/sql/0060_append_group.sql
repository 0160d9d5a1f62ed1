-- Group commit across tenants: many independent one-shot appends in one transaction.
--
-- Replaces the one-tenant batch of 0005. A transaction's fixed costs (the round trip,
-- starting the function, the commit and its WAL flush) are several times the cost of
-- inserting one event, so an append that arrives while others are in flight joins the
-- next transaction, whatever its tenant (eventstore/group_commit.py). Each item keeps
-- its own meaning: its tenant and actor are armed for its own insert, so the trigger
-- stamps and chains it exactly as for a lone append; it is checked against its own
-- expected version; all of its events are inserted or none; a conflicting item does
-- not fail the others.
--
-- Lock order, so that two groups never wait for each other in a cycle: every stream
-- lock first, in key order, then the tenant heads in tenant order (items are inserted
-- tenant by tenant, in arrival order within a tenant).
--
-- Arguments are parallel arrays, one entry per item (tenant, actor, stream, expected
-- version, number of events), then one entry per event, items' events back to back.

CREATE FUNCTION append_group_as(
    p_tenants uuid[], p_actor_kinds text[], p_actor_ids text[], p_streams uuid[],
    p_expected integer[], p_counts integer[], p_types text[], p_schema_versions integer[],
    p_data jsonb[], p_metadata jsonb[]
) RETURNS TABLE (
    item integer, actual integer, tenant_id uuid, seq bigint, stream_id uuid,
    version integer, type text, schema_version integer, data jsonb, metadata jsonb,
    actor_kind text, actor_id text, recorded_at timestamptz, hash bytea
)
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, public
SET plan_cache_mode = force_generic_plan
AS $$
#variable_conflict use_column
DECLARE
    r record;
    v_first integer[];
BEGIN
    IF cardinality(p_tenants) <> cardinality(p_streams)
       OR cardinality(p_tenants) <> cardinality(p_counts)
       OR cardinality(p_tenants) <> cardinality(p_expected)
       OR cardinality(p_tenants) <> cardinality(p_actor_kinds)
       OR cardinality(p_tenants) <> cardinality(p_actor_ids)
       OR cardinality(p_types) <> cardinality(p_schema_versions)
       OR cardinality(p_types) <> cardinality(p_data)
       OR cardinality(p_types) <> cardinality(p_metadata)
       OR (SELECT coalesce(sum(c), 0) FROM unnest(p_counts) AS c) <> cardinality(p_types)
       OR EXISTS (SELECT FROM unnest(p_counts) AS c WHERE c IS NULL OR c < 1) THEN
        RAISE EXCEPTION 'append_group_as: argument arrays disagree in length'
            USING ERRCODE = '22023';
    END IF;
    PERFORM pg_advisory_xact_lock(k)
       FROM (SELECT DISTINCT hashtextextended(t::text || '/' || s::text, 0) AS k
               FROM unnest(p_tenants, p_streams) AS u(t, s) ORDER BY 1) AS ordered;
    -- Where each item's events start in the per-event arrays.
    v_first := ARRAY(
        SELECT 1 + coalesce(sum(c) OVER (ORDER BY o ROWS BETWEEN UNBOUNDED PRECEDING
                                                         AND 1 PRECEDING), 0)
          FROM unnest(p_counts) WITH ORDINALITY AS x(c, o) ORDER BY o);
    -- One pass per (tenant, actor): arm them, then check every item's expected version
    -- and insert the events of the items that pass, in one statement. Its snapshot is
    -- taken after the stream locks above, so it sees every append committed before.
    -- Streams are unique within a group (the caller sees to it; a duplicate would
    -- fail the whole group on the unique version index, never write a wrong version).
    FOR r IN SELECT u.t, u.ak, u.ai, array_agg(u.i ORDER BY u.i) AS items,
                    array_agg(u.s ORDER BY u.i) AS streams
               FROM unnest(p_tenants, p_actor_kinds, p_actor_ids, p_streams)
                        WITH ORDINALITY AS u(t, ak, ai, s, i)
              GROUP BY u.t, u.ak, u.ai
              ORDER BY u.t, min(u.i) LOOP
        PERFORM set_config('app.tenant_id', r.t::text, true),
                set_config('app.actor_kind', coalesce(r.ak, ''), true),
                set_config('app.actor_id', coalesce(r.ai, ''), true);
        RETURN QUERY
        WITH cur AS MATERIALIZED (
            SELECT c.i, c.s, coalesce((SELECT max(e.version) FROM events e
                                        WHERE e.tenant_id = r.t AND e.stream_id = c.s),
                                       0) AS v
              FROM unnest(r.items, r.streams) AS c(i, s)
        ), inserted AS (
            INSERT INTO events AS ev (tenant_id, stream_id, version, type, schema_version,
                                      data, metadata)
            SELECT r.t, c.s, c.v + x.ord, x.type, x.schema_version, x.data,
                   coalesce(x.metadata, '{}')
              FROM cur c,
                   LATERAL unnest(
                       p_types[v_first[c.i]:v_first[c.i] + p_counts[c.i] - 1],
                       p_schema_versions[v_first[c.i]:v_first[c.i] + p_counts[c.i] - 1],
                       p_data[v_first[c.i]:v_first[c.i] + p_counts[c.i] - 1],
                       p_metadata[v_first[c.i]:v_first[c.i] + p_counts[c.i] - 1])
                       WITH ORDINALITY AS x(type, schema_version, data, metadata, ord)
             WHERE p_expected[c.i] IS NULL OR c.v = p_expected[c.i]
             ORDER BY c.i, x.ord
            RETURNING ev.*
        )
        SELECT c.i::integer,
               CASE WHEN p_expected[c.i] IS NULL OR c.v = p_expected[c.i] THEN NULL
                    ELSE c.v END,
               ins.tenant_id, ins.seq, ins.stream_id, ins.version, ins.type,
               ins.schema_version, ins.data, ins.metadata, ins.actor_kind, ins.actor_id,
               ins.recorded_at, ins.hash
          FROM cur c LEFT JOIN inserted ins ON ins.stream_id = c.s;
    END LOOP;
END
$$;

GRANT EXECUTE ON FUNCTION append_group_as(uuid[], text[], text[], uuid[], integer[], integer[],
                                          text[], integer[], jsonb[], jsonb[])
    TO helpdesk_runtime;

DROP FUNCTION append_batch_as(uuid, text[], text[], uuid[], integer[], integer[], text[],
                              integer[], jsonb[], jsonb[]);
