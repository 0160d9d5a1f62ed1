-- Group commit across tenants: many independent one-shot appends in one transaction.
--
-- Replaces the one-tenant batch of 0005. A transaction's fixed costs (the round trip,
-- starting the function, the commit and its WAL flush) are several times the cost of
-- inserting one event, so an append that arrives while others are in flight joins the
-- next transaction, whatever its tenant (eventstore/group_commit.py). Each item keeps
-- its own meaning: its tenant and actor are armed for the insert that carries its
-- events, so the trigger stamps and chains them exactly as for a lone append; it is
-- checked against its own expected version; all of its events are inserted or none;
-- a conflicting item does not fail the others.
--
-- Lock order, so that two groups never wait for each other in a cycle: every stream
-- lock first, in key order, then the tenant heads in tenant order (items are inserted
-- tenant by tenant, in arrival order within a tenant).
--
-- Arguments are parallel arrays, one entry per item (tenant, actor, stream, expected
-- version, number of events), then one entry per event, items' events back to back.
-- Streams are unique within a group (the caller sees to it; a duplicate would fail
-- the whole group on the unique version index, never write a wrong version).
--
-- Rows returned: one per item whose expected version did not match (item and actual
-- set), and one per inserted event, carrying what the database assigned (seq, version,
-- actor, recorded_at, hash); the caller already holds the rest, and matches events to
-- items by tenant and stream. Kept lean on purpose: a group's cost is mostly fixed,
-- and planning a statement per call, or sending the payloads back, was most of it
-- (force_generic_plan: plpgsql otherwise re-plans these array-driven statements with
-- custom plans on every call, at several times the cost).

CREATE FUNCTION append_group_as(
    p_tenants uuid[], p_actor_kinds text[], p_actor_ids text[], p_streams uuid[],
    p_expected integer[], p_counts integer[], p_types text[], p_schema_versions integer[],
    p_data jsonb[], p_metadata jsonb[]
) RETURNS TABLE (
    item integer, actual integer, tenant_id uuid, seq bigint, stream_id uuid,
    version integer, actor_kind text, actor_id text, recorded_at timestamptz, hash bytea
)
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, public
SET plan_cache_mode = force_generic_plan
AS $$
#variable_conflict use_column
DECLARE
    r record;
    v_first integer[];   -- where each item's events start in the per-event arrays
    v_current integer[]; -- the current version of each stream of a run
    v_pos integer[];     -- the run's events to insert: position, version, stream
    v_version integer[];
    v_stream uuid[];
    n integer;
    i integer;
    j integer;
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
    v_first := ARRAY(
        SELECT 1 + coalesce(sum(c) OVER (ORDER BY o ROWS BETWEEN UNBOUNDED PRECEDING
                                                         AND 1 PRECEDING), 0)
          FROM unnest(p_counts) WITH ORDINALITY AS x(c, o) ORDER BY o);
    -- One run per (tenant, actor): arm them, read the current version of each of the
    -- run's streams (a snapshot taken after the stream locks above, so it sees every
    -- append committed before), decide each item, insert the events of those that
    -- pass in one statement.
    FOR r IN SELECT u.t, u.ak, u.ai, array_agg(u.i ORDER BY u.i) AS items,
                    array_agg(u.s ORDER BY u.i) AS streams
               FROM unnest(p_tenants, p_actor_kinds, p_actor_ids, p_streams)
                        WITH ORDINALITY AS u(t, ak, ai, s, i)
              GROUP BY u.t, u.ak, u.ai
              ORDER BY u.t, min(u.i) LOOP
        PERFORM set_config('app.tenant_id', r.t::text, true),
                set_config('app.actor_kind', coalesce(r.ak, ''), true),
                set_config('app.actor_id', coalesce(r.ai, ''), true);
        v_current := ARRAY(
            SELECT coalesce((SELECT max(e.version) FROM events e
                              WHERE e.tenant_id = r.t AND e.stream_id = u.s), 0)
              FROM unnest(r.streams) WITH ORDINALITY AS u(s, o) ORDER BY u.o);
        v_pos := '{}';
        v_version := '{}';
        v_stream := '{}';
        FOR n IN 1 .. cardinality(r.items) LOOP
            i := r.items[n];
            IF p_expected[i] IS NOT NULL AND v_current[n] <> p_expected[i] THEN
                item := i;
                actual := v_current[n];
                RETURN NEXT;
                CONTINUE;
            END IF;
            FOR j IN 1 .. p_counts[i] LOOP
                v_pos := v_pos || (v_first[i] + j - 1);
                v_version := v_version || (v_current[n] + j);
                v_stream := v_stream || r.streams[n];
            END LOOP;
        END LOOP;
        RETURN QUERY
            INSERT INTO events AS ev (tenant_id, stream_id, version, type, schema_version,
                                      data, metadata)
            SELECT r.t, x.s, x.v, p_types[x.p], p_schema_versions[x.p], p_data[x.p],
                   coalesce(p_metadata[x.p], '{}')
              FROM unnest(v_pos, v_version, v_stream) WITH ORDINALITY AS x(p, v, s, o)
             ORDER BY x.o
            RETURNING NULL::integer, NULL::integer, ev.tenant_id, ev.seq, ev.stream_id,
                      ev.version, ev.actor_kind, ev.actor_id, ev.recorded_at, ev.hash;
    END LOOP;
END
$$;

GRANT EXECUTE ON FUNCTION append_group_as(uuid[], text[], text[], uuid[], integer[], integer[],
                                          text[], integer[], jsonb[], jsonb[])
    TO helpdesk_runtime;

DROP FUNCTION append_batch_as(uuid, text[], text[], uuid[], integer[], integer[], text[],
                              integer[], jsonb[], jsonb[]);
