-- Queue refinements: global jobs (no tenant) dedupe too, and wake-ups only for ready work.

-- NULL tenant ids are distinct in a plain unique index, so a periodic global job
-- (jobs.purge) could be seeded twice by two workers starting at once.
DROP INDEX jobs_live_dedupe;
CREATE UNIQUE INDEX jobs_live_dedupe ON jobs (tenant_id, dedupe_key) NULLS NOT DISTINCT
    WHERE dedupe_key IS NOT NULL AND status IN ('ready', 'running');

-- Claims, lease renewals and completions update rows too; notifying on those would
-- wake every scheduler for every finished job. Only ready rows are news.
CREATE OR REPLACE FUNCTION jobs_notify() RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, public
AS $$
DECLARE
    first_due timestamptz;
BEGIN
    SELECT min(run_at) INTO first_due FROM new_rows WHERE status = 'ready';
    IF first_due IS NOT NULL THEN
        PERFORM pg_notify('helpdesk_jobs', first_due::text);
    END IF;
    RETURN NULL;
END
$$;
