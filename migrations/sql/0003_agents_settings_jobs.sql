-- Agents, tenant settings and the jobs queue: tables several parts of the service share.

CREATE TABLE agents (
    tenant_id   uuid NOT NULL REFERENCES tenants (id),
    id          uuid NOT NULL,
    email       text NOT NULL,
    name        text NOT NULL,
    active      boolean NOT NULL DEFAULT true,
    version     integer NOT NULL DEFAULT 1,
    created_at  timestamptz NOT NULL,
    updated_at  timestamptz NOT NULL,
    PRIMARY KEY (tenant_id, id),
    UNIQUE (tenant_id, email)
);
CREATE INDEX agents_listing ON agents (tenant_id, created_at, id);

-- One row per tenant; `settings` holds the JSON of the tenant's settings document
-- (SLA targets, business hours, paused states, sweep windows). No row = defaults.
CREATE TABLE tenant_settings (
    tenant_id   uuid PRIMARY KEY REFERENCES tenants (id),
    settings    jsonb NOT NULL,
    version     integer NOT NULL DEFAULT 1,
    updated_at  timestamptz NOT NULL
);

-- The job queue. A live job (ready or running) is unique per (tenant, dedupe_key), so
-- scheduling a timer again moves it instead of adding a second one.
CREATE TABLE jobs (
    id            bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    tenant_id     uuid REFERENCES tenants (id),
    kind          text NOT NULL,
    dedupe_key    text,
    payload       jsonb NOT NULL DEFAULT '{}',
    run_at        timestamptz NOT NULL,
    status        text NOT NULL DEFAULT 'ready'
                  CHECK (status IN ('ready', 'running', 'done', 'dead')),
    attempts      integer NOT NULL DEFAULT 0,
    max_attempts  integer NOT NULL DEFAULT 10 CHECK (max_attempts >= 1),
    locked_until  timestamptz,
    locked_by     text,
    last_error    text,
    created_at    timestamptz NOT NULL DEFAULT now(),
    updated_at    timestamptz NOT NULL DEFAULT now()
);
-- The claim query reads only this small partial index.
CREATE INDEX jobs_due ON jobs (run_at) WHERE status IN ('ready', 'running');
CREATE UNIQUE INDEX jobs_live_dedupe ON jobs (tenant_id, dedupe_key)
    WHERE dedupe_key IS NOT NULL AND status IN ('ready', 'running');
CREATE INDEX jobs_finished ON jobs (updated_at) WHERE status IN ('done', 'dead');
-- A queue table churns: vacuum and analyze it far more eagerly than the defaults.
ALTER TABLE jobs SET (autovacuum_vacuum_scale_factor = 0.01,
                      autovacuum_vacuum_threshold = 1000,
                      autovacuum_analyze_scale_factor = 0.02,
                      fillfactor = 80);

-- Wake sleeping schedulers when work is added or moved earlier.
CREATE FUNCTION jobs_notify() RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, public
AS $$
BEGIN
    PERFORM pg_notify('helpdesk_jobs', (SELECT min(run_at)::text FROM new_rows WHERE status = 'ready'));
    RETURN NULL;
END
$$;
CREATE TRIGGER jobs_notify_insert AFTER INSERT ON jobs
    REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION jobs_notify();
CREATE TRIGGER jobs_notify_update AFTER UPDATE ON jobs
    REFERENCING NEW TABLE AS new_rows
    FOR EACH STATEMENT EXECUTE FUNCTION jobs_notify();

ALTER TABLE agents ENABLE ROW LEVEL SECURITY;
ALTER TABLE agents FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON agents
    USING (tenant_id = nullif(current_setting('app.tenant_id', true), '')::uuid)
    WITH CHECK (tenant_id = nullif(current_setting('app.tenant_id', true), '')::uuid);

ALTER TABLE tenant_settings ENABLE ROW LEVEL SECURITY;
ALTER TABLE tenant_settings FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON tenant_settings
    USING (tenant_id = nullif(current_setting('app.tenant_id', true), '')::uuid)
    WITH CHECK (tenant_id = nullif(current_setting('app.tenant_id', true), '')::uuid);

-- Jobs: a tenant's own transactions schedule its jobs; the scheduler (app.worker) claims
-- across tenants. Jobs with no tenant (purges) are visible to the worker only.
ALTER TABLE jobs ENABLE ROW LEVEL SECURITY;
ALTER TABLE jobs FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON jobs
    USING (tenant_id = nullif(current_setting('app.tenant_id', true), '')::uuid)
    WITH CHECK (tenant_id = nullif(current_setting('app.tenant_id', true), '')::uuid);
CREATE POLICY worker_all ON jobs
    USING (current_setting('app.worker', true) = 'on')
    WITH CHECK (current_setting('app.worker', true) = 'on');

GRANT SELECT, INSERT, UPDATE ON agents, tenant_settings TO helpdesk_runtime;
GRANT SELECT, INSERT, UPDATE, DELETE ON jobs TO helpdesk_runtime;
