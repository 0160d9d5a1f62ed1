-- Summary cells: the analytics summary's counters and duration histograms per creation
-- day span and group (projections/analytics_cells.py), so a summary over a year reads
-- a few cells per group instead of sorting every ticket of the year per percentile.
-- Part of the analytics projection: a rebuild deletes and refills them, and
-- `helpdesk migrate` fills them from analytics_tickets for tenants that predate them.
CREATE TABLE analytics_summary_cells (
    tenant_id  uuid NOT NULL REFERENCES tenants (id),
    dim        text NOT NULL,
    span       integer NOT NULL,
    start_day  date NOT NULL,
    key        text NOT NULL,
    metric     smallint NOT NULL,
    bucket     integer NOT NULL,
    n          integer NOT NULL,
    PRIMARY KEY (tenant_id, dim, span, start_day, key, metric, bucket)
);

ALTER TABLE analytics_summary_cells ENABLE ROW LEVEL SECURITY;
ALTER TABLE analytics_summary_cells FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON analytics_summary_cells
    USING (tenant_id = nullif(current_setting('app.tenant_id', true), '')::uuid)
    WITH CHECK (tenant_id = nullif(current_setting('app.tenant_id', true), '')::uuid);
GRANT SELECT, INSERT, UPDATE, DELETE ON analytics_summary_cells TO helpdesk_runtime;
