-- Group commit for one tenant: many independent appends in one transaction.
--
-- Within a tenant, appends commit one at a time: the head row lock is held until
-- the commit's WAL flush. Batching the appends that arrive while one is in flight
-- into the next transaction pays that flush once per batch instead of once per append
-- (eventstore/batcher.py). Each item keeps its own meaning: it is checked against its
-- own expected version and either all of its events are inserted or none, and a
-- conflicting item does not fail the others.
--
-- Every stream lock is taken before the first insert takes the head lock, in a fixed
-- order, so a batch never waits for a stream while it holds the head.

CREATE FUNCTION append_batch_as(
    p_tenant uuid, p_actor_kinds text[], p_actor_ids text[], p_streams uuid[],
    p_expected integer[], p_items integer[], p_types text[], p_schema_versions integer[],
    p_data jsonb[], p_metadata jsonb[]
) RETURNS TABLE (
    item integer, actual integer, tenant_id uuid, seq bigint, stream_id uuid,
    version integer, type text, schema_version integer, data jsonb, metadata jsonb,
    actor_kind text, actor_id text, recorded_at timestamptz, hash bytea
)
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, public
AS $$
#variable_conflict use_column
DECLARE
    i integer;
    v_current integer;
BEGIN
    PERFORM set_config('app.tenant_id', p_tenant::text, true);
    PERFORM pg_advisory_xact_lock(hashtextextended(p_tenant::text || '/' || s::text, 0))
       FROM (SELECT DISTINCT s FROM unnest(p_streams) AS s ORDER BY s) AS ordered;
    FOR i IN 1 .. coalesce(array_length(p_streams, 1), 0) LOOP
        SELECT coalesce(max(e.version), 0) INTO v_current
          FROM events e WHERE e.tenant_id = p_tenant AND e.stream_id = p_streams[i];
        IF p_expected[i] IS NOT NULL AND v_current <> p_expected[i] THEN
            RETURN QUERY SELECT i, v_current, NULL::uuid, NULL::bigint, NULL::uuid,
                                NULL::integer, NULL::text, NULL::integer, NULL::jsonb,
                                NULL::jsonb, NULL::text, NULL::text, NULL::timestamptz,
                                NULL::bytea;
            CONTINUE;
        END IF;
        PERFORM set_config('app.actor_kind', coalesce(p_actor_kinds[i], ''), true),
                set_config('app.actor_id', coalesce(p_actor_ids[i], ''), true);
        RETURN QUERY
        WITH inserted AS (
            INSERT INTO events AS ev (tenant_id, stream_id, version, type, schema_version,
                                      data, metadata)
            SELECT p_tenant, p_streams[i], v_current + row_number() OVER (ORDER BY x.ord),
                   x.type, x.schema_version, x.data, coalesce(x.metadata, '{}')
              FROM unnest(p_items, p_types, p_schema_versions, p_data, p_metadata)
                       WITH ORDINALITY AS x(item, type, schema_version, data, metadata, ord)
             WHERE x.item = i
             ORDER BY x.ord
            RETURNING ev.*
        )
        SELECT i, NULL::integer, ins.tenant_id, ins.seq, ins.stream_id, ins.version,
               ins.type, ins.schema_version, ins.data, ins.metadata, ins.actor_kind,
               ins.actor_id, ins.recorded_at, ins.hash
          FROM inserted ins;
    END LOOP;
END
$$;

GRANT EXECUTE ON FUNCTION append_batch_as(uuid, text[], text[], uuid[], integer[], integer[],
                                          text[], integer[], jsonb[], jsonb[])
    TO helpdesk_runtime;
