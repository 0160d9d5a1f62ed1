-- Append as one server-side call: lock the stream, check its version, insert.
--
-- Doing the three steps in one round trip matters: an append is a handful of
-- statements otherwise, and round trips, not the insert, dominate its cost.
-- The function is VOLATILE, so under READ COMMITTED each statement inside it takes
-- a fresh snapshot: the version check after the lock sees every append committed
-- by an earlier lock holder. A loser of a race fails at the check, before it ever
-- queues on the tenant head lock that the insert trigger takes.

CREATE FUNCTION append_events(
    p_tenant uuid, p_stream uuid, p_expected integer,
    p_types text[], p_schema_versions integer[], p_data jsonb[], p_metadata jsonb[]
) RETURNS SETOF events
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, public
AS $$
DECLARE
    v_current integer;
BEGIN
    PERFORM pg_advisory_xact_lock(hashtextextended(p_tenant::text || '/' || p_stream::text, 0));
    SELECT coalesce(max(version), 0) INTO v_current
      FROM events WHERE tenant_id = p_tenant AND stream_id = p_stream;
    IF p_expected IS NOT NULL AND v_current <> p_expected THEN
        RAISE EXCEPTION 'stream % is at version %, not %', p_stream, v_current, p_expected
            USING ERRCODE = 'HD004', DETAIL = v_current::text;
    END IF;
    RETURN QUERY
    INSERT INTO events (tenant_id, stream_id, version, type, schema_version, data, metadata)
    SELECT p_tenant, p_stream, v_current + e.ord, e.type, e.schema_version, e.data,
           coalesce(e.metadata, '{}')
      FROM unnest(p_types, p_schema_versions, p_data, p_metadata)
               WITH ORDINALITY AS e(type, schema_version, data, metadata, ord)
     ORDER BY e.ord
    RETURNING *;
END
$$;

-- The same, arming tenant and actor first (transaction-local), for a caller that
-- appends in a transaction of its own: the whole append is then one round trip.
CREATE FUNCTION append_events_as(
    p_tenant uuid, p_actor_kind text, p_actor_id text, p_stream uuid, p_expected integer,
    p_types text[], p_schema_versions integer[], p_data jsonb[], p_metadata jsonb[]
) RETURNS SETOF events
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, public
AS $$
BEGIN
    PERFORM set_config('app.tenant_id', p_tenant::text, true),
            set_config('app.actor_kind', coalesce(p_actor_kind, ''), true),
            set_config('app.actor_id', coalesce(p_actor_id, ''), true);
    RETURN QUERY SELECT * FROM append_events(p_tenant, p_stream, p_expected, p_types,
                                             p_schema_versions, p_data, p_metadata);
END
$$;

GRANT EXECUTE ON FUNCTION append_events(uuid, uuid, integer, text[], integer[], jsonb[], jsonb[])
    TO helpdesk_runtime;
GRANT EXECUTE ON FUNCTION append_events_as(uuid, text, text, uuid, integer, text[], integer[],
                                           jsonb[], jsonb[])
    TO helpdesk_runtime;
