-- The event store: tenants, per-tenant heads (gapless seq + hash chain) and the
-- immutable events table, all under forced row-level security.
--
-- Runs as the owner role (helpdesk_owner). The runtime role group
-- (helpdesk_runtime) gets only what it needs: SELECT and INSERT on events, SELECT
-- on tenants and tenant_heads. The head row is updated only by the insert trigger,
-- which runs as the owner (SECURITY DEFINER), so no runtime code can move a seq.

CREATE TABLE tenants (
    id          uuid PRIMARY KEY,
    name        text NOT NULL CHECK (length(name) BETWEEN 1 AND 200),
    created_at  timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE tenant_heads (
    tenant_id   uuid PRIMARY KEY REFERENCES tenants (id),
    seq         bigint NOT NULL DEFAULT 0,
    hash        bytea NOT NULL DEFAULT '\x0000000000000000000000000000000000000000000000000000000000000000'
);

CREATE TABLE events (
    tenant_id       uuid NOT NULL,
    seq             bigint NOT NULL,
    stream_id       uuid NOT NULL,
    version         integer NOT NULL CHECK (version >= 1),
    type            text NOT NULL CHECK (length(type) BETWEEN 1 AND 100),
    schema_version  integer NOT NULL DEFAULT 1 CHECK (schema_version >= 1),
    data            jsonb NOT NULL,
    metadata        jsonb NOT NULL DEFAULT '{}',
    actor_kind      text NOT NULL,
    actor_id        text NOT NULL,
    recorded_at     timestamptz NOT NULL,
    hash            bytea NOT NULL,
    PRIMARY KEY (tenant_id, seq),
    UNIQUE (tenant_id, stream_id, version)
);
CREATE INDEX events_tenant_type_seq ON events (tenant_id, type, seq);
CREATE INDEX events_tenant_recorded ON events (tenant_id, recorded_at);

-- The exact bytes each link of the chain hashes. Kept as one function so the insert
-- trigger and verification can never disagree; mirrored in eventstore/chain.py for
-- offline verification of exports. Written to be inlined into the statements that
-- call it (no SET clause, names qualified instead): as an out-of-line SQL function it
-- was parsed again on every append.
CREATE FUNCTION event_canonical(
    p_tenant uuid, p_seq bigint, p_stream uuid, p_version integer, p_type text,
    p_schema_version integer, p_data jsonb, p_metadata jsonb, p_actor_kind text,
    p_actor_id text, p_recorded_at timestamptz
) RETURNS bytea
LANGUAGE sql STABLE PARALLEL SAFE
AS $$
    SELECT pg_catalog.convert_to(pg_catalog.jsonb_build_array(
        p_tenant::text, p_seq, p_stream::text, p_version, p_type, p_schema_version,
        p_data, p_metadata, p_actor_kind, p_actor_id,
        pg_catalog.to_char(pg_catalog.timezone('UTC', p_recorded_at),
                           'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')
    )::text, 'UTF8')
$$;

-- Assigns seq and hash under the tenant head row lock and stamps the actor from
-- the transaction-local settings. The UPDATE ... RETURNING takes the head row lock,
-- held until commit: within one tenant, events commit in seq order, so a reader
-- tailing seq > n never skips an event that commits later.
CREATE FUNCTION events_before_insert() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER
SET search_path = pg_catalog, public
AS $$
DECLARE
    v_tenant uuid := nullif(current_setting('app.tenant_id', true), '')::uuid;
    v_actor_kind text := nullif(current_setting('app.actor_kind', true), '');
    v_actor_id text := nullif(current_setting('app.actor_id', true), '');
BEGIN
    IF v_tenant IS NULL OR NEW.tenant_id IS DISTINCT FROM v_tenant THEN
        RAISE EXCEPTION 'event insert outside its tenant context'
            USING ERRCODE = '42501';
    END IF;
    IF v_actor_kind IS NULL OR v_actor_id IS NULL THEN
        RAISE EXCEPTION 'event insert with no actor armed (app.actor_kind, app.actor_id)'
            USING ERRCODE = 'HD001';
    END IF;
    NEW.actor_kind := v_actor_kind;
    NEW.actor_id := v_actor_id;
    NEW.recorded_at := clock_timestamp();
    UPDATE tenant_heads h
       SET seq = h.seq + 1,
           hash = sha256(h.hash || event_canonical(
               NEW.tenant_id, h.seq + 1, NEW.stream_id, NEW.version, NEW.type,
               NEW.schema_version, NEW.data, NEW.metadata, NEW.actor_kind,
               NEW.actor_id, NEW.recorded_at))
     WHERE h.tenant_id = NEW.tenant_id
    RETURNING h.seq, h.hash INTO NEW.seq, NEW.hash;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'unknown tenant %', NEW.tenant_id USING ERRCODE = 'HD002';
    END IF;
    RETURN NEW;
END
$$;

CREATE TRIGGER events_assign_seq BEFORE INSERT ON events
    FOR EACH ROW EXECUTE FUNCTION events_before_insert();

CREATE FUNCTION events_refuse_change() RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog
AS $$
BEGIN
    RAISE EXCEPTION 'events are immutable: % refused', TG_OP USING ERRCODE = 'HD003';
END
$$;

CREATE TRIGGER events_no_update BEFORE UPDATE OR DELETE ON events
    FOR EACH ROW EXECUTE FUNCTION events_refuse_change();
CREATE TRIGGER events_no_truncate BEFORE TRUNCATE ON events
    FOR EACH STATEMENT EXECUTE FUNCTION events_refuse_change();

-- No NOTIFY here, on purpose: a transaction that notifies takes a database-wide lock
-- at commit and holds it through its WAL flush, which serialised every tenant's
-- appends (measured: it halved append throughput). The event store notifies
-- `helpdesk_events` right after commit instead (eventstore/notifier.py).

-- Row-level security: no tenant context means no rows and no writes.
ALTER TABLE tenants ENABLE ROW LEVEL SECURITY;
ALTER TABLE tenants FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON tenants
    USING (id = nullif(current_setting('app.tenant_id', true), '')::uuid)
    WITH CHECK (id = nullif(current_setting('app.tenant_id', true), '')::uuid);
-- Workers enumerate tenants to find work; only the scheduler arms app.worker.
CREATE POLICY worker_read ON tenants FOR SELECT
    USING (current_setting('app.worker', true) = 'on');

ALTER TABLE tenant_heads ENABLE ROW LEVEL SECURITY;
ALTER TABLE tenant_heads FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON tenant_heads
    USING (tenant_id = nullif(current_setting('app.tenant_id', true), '')::uuid)
    WITH CHECK (tenant_id = nullif(current_setting('app.tenant_id', true), '')::uuid);
CREATE POLICY worker_read ON tenant_heads FOR SELECT
    USING (current_setting('app.worker', true) = 'on');

ALTER TABLE events ENABLE ROW LEVEL SECURITY;
ALTER TABLE events FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON events
    USING (tenant_id = nullif(current_setting('app.tenant_id', true), '')::uuid)
    WITH CHECK (tenant_id = nullif(current_setting('app.tenant_id', true), '')::uuid);

REVOKE ALL ON FUNCTION events_before_insert() FROM PUBLIC;
GRANT SELECT ON tenants, tenant_heads TO helpdesk_runtime;
GRANT SELECT, INSERT ON events TO helpdesk_runtime;
