-- A transaction acting as a customer (acting_contact(), migration 0460) reads from
-- `events` only the public events of that contact's own tickets: the ticket opened,
-- its public messages, its state changes and follow-ups. Never an internal note's
-- event, never the staff's changes to the ticket (assignee, priority, group, tags,
-- fields, SLA breaches: the portal shows none of these), never another contact's
-- ticket, never any other stream (contacts, groups, the tenant's own). The portal's
-- routes do not read events at all; this holds whatever SQL runs.
--
-- Appending is the exception. append_events reads the stream's current version and
-- returns the rows it inserts (INSERT ... RETURNING, which row-level security checks
-- against this policy): a customer's reply after an internal note must still count
-- that note's version, and a customer's own sign-in is an event on the tenant stream.
-- So append_events marks the transaction as appending (app.appending, transaction-
-- local, put back when it returns and rolled back with it on an error) and the policy
-- lets everything through while it is marked; nothing else sets it. Like the actor
-- itself, the mark is armed by the service's own code: row-level security here keeps
-- the service's queries in scope, it is no sandbox for SQL written by a caller.

CREATE OR REPLACE FUNCTION append_events(
    p_tenant uuid, p_stream uuid, p_expected integer,
    p_types text[], p_schema_versions integer[], p_data jsonb[], p_metadata jsonb[]
) RETURNS SETOF events
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, public
AS $$
DECLARE
    v_current integer;
    v_appending text := current_setting('app.appending', true);
BEGIN
    PERFORM pg_advisory_xact_lock(hashtextextended(p_tenant::text || '/' || p_stream::text, 0));
    PERFORM set_config('app.appending', 'on', true);
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
    PERFORM set_config('app.appending', coalesce(v_appending, ''), true);
END
$$;

-- Whether a customer's transaction may read an event row: the customer's branch of
-- the policy below. A function of its own, in plpgsql, on purpose: written inline, the
-- EXISTS on tickets was planned into every events query of every caller (about 2.7 ms
-- more planning for a page of the staff feed, and a hundredfold cost estimate that
-- could move other plans), although only a customer ever reaches it. Opaque and
-- costed as cheap, it is neither planned nor estimated for anyone else, and the first
-- branch of the policy answers for them without calling it.
CREATE FUNCTION customer_reads_event(p_tenant uuid, p_stream uuid, p_type text,
                                     p_data jsonb)
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
                    WHERE t.tenant_id = p_tenant AND t.id = p_stream
                      AND t.contact_id = acting_contact());
END
$$;

REVOKE ALL ON FUNCTION customer_reads_event(uuid, uuid, text, jsonb) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION customer_reads_event(uuid, uuid, text, jsonb) TO helpdesk_runtime;

-- Restrictive and for reads only: it narrows what the tenant policy lets a customer
-- read; writes are the appends above. The first branch is written as in 0460 for the
-- planner's sake (nearly every row, for every caller but a customer).
CREATE POLICY contact_scope ON events AS RESTRICTIVE FOR SELECT
    USING (current_setting('app.actor_kind', true) IS DISTINCT FROM 'customer'
           OR customer_reads_event(tenant_id, stream_id, type, data));
