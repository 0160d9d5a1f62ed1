-- Summary cells: the analytics summary's counters and duration histograms per span of
-- creation days and group (projections/analytics_cells.py), so a summary over a year
-- reads a few cells per group instead of sorting every ticket of the year per
-- percentile. Part of the analytics projection: a rebuild deletes and refills them,
-- and `helpdesk migrate` fills them from analytics_tickets for tenants that predate
-- them.

-- Histograms are int arrays indexed by bucket (element i counts bucket i - 1), as
-- long as their last bucket in use; the shorter is read as padded with zeros. Reads
-- add them up in the application (projections/analytics_reads.py).
CREATE FUNCTION histogram_add(a integer[], b integer[]) RETURNS integer[]
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN (SELECT coalesce(array_agg(coalesce(x, 0) + coalesce(y, 0) ORDER BY i), '{}')
              FROM unnest(a, b) WITH ORDINALITY AS u(x, y, i));

CREATE TABLE analytics_summary_cells (
    tenant_id               uuid NOT NULL REFERENCES tenants (id),
    dim                     text NOT NULL,
    span                    integer NOT NULL,
    start_day               date NOT NULL,
    key                     text NOT NULL,
    tickets                 integer NOT NULL,
    solved                  integer NOT NULL,
    met_first_response      integer NOT NULL,
    met_next_reply          integer NOT NULL,
    met_resolution          integer NOT NULL,
    ever_solved             integer NOT NULL,
    reopened                integer NOT NULL,
    one_touch               integer NOT NULL,
    first_reply             integer[] NOT NULL,
    first_reply_business    integer[] NOT NULL,
    resolution              integer[] NOT NULL,
    resolution_open         integer[] NOT NULL,
    PRIMARY KEY (tenant_id, dim, span, start_day, key)
);

ALTER TABLE analytics_summary_cells ENABLE ROW LEVEL SECURITY;
ALTER TABLE analytics_summary_cells FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON analytics_summary_cells
    USING (tenant_id = nullif(current_setting('app.tenant_id', true), '')::uuid)
    WITH CHECK (tenant_id = nullif(current_setting('app.tenant_id', true), '')::uuid);
GRANT SELECT, INSERT, UPDATE, DELETE ON analytics_summary_cells TO helpdesk_runtime;
