-- An operator's import (`helpdesk tenant import`, migration 0655) checks the chain once
-- a statement rather than once a row. The row trigger checked each imported event in
-- PL/pgSQL: the owner check, the link read from and written back to
-- `app.import_link` as text, the canonical bytes and their hash, about 48 us an event
-- of a 1,000-event batch (EXPLAIN ANALYZE, load average 7), half of the import's time
-- in Postgres. Now the row trigger lets an imported row through as given, and an
-- AFTER STATEMENT trigger over the statement's new rows checks, in one query, that
-- each row's seq follows the one before it and that its hash is
-- sha256(previous hash || event_canonical(row)), the first row's "before" being the
-- link (`app.import_link`, else the tenant's head), exactly as the row trigger did.
-- Every link holding is what the per-row check established, so the guarantee is the
-- same: a statement with a row that does not continue the chain, or run by a login
-- that is not a member of the owner role, raises (HD006, 42501) and inserts nothing.
-- Transition tables are captured for the statement triggers on events already
-- (webhooks, mail, Slack), so appends pay one function call that returns at once.

CREATE OR REPLACE FUNCTION events_before_insert() RETURNS trigger
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, public
AS $$
DECLARE
    v_tenant uuid := nullif(current_setting('app.tenant_id', true), '')::uuid;
    v_actor_kind text;
    v_actor_id text;
    v_paused integer;
BEGIN
    IF v_tenant IS NULL OR NEW.tenant_id IS DISTINCT FROM v_tenant THEN
        RAISE EXCEPTION 'event insert outside its tenant context'
            USING ERRCODE = '42501';
    END IF;
    IF current_setting('app.importing', true) = 'on' THEN
        -- Kept as given (seq, actor, time, hash): events_check_import checks every
        -- link of the statement, and who armed the import, before the statement ends.
        RETURN NEW;
    END IF;
    -- Read here, not in DECLARE: an imported row needs neither.
    v_actor_kind := nullif(current_setting('app.actor_kind', true), '');
    v_actor_id := nullif(current_setting('app.actor_id', true), '');
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
    RETURNING h.seq, h.hash, h.paused_retry_after INTO NEW.seq, NEW.hash, v_paused;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'unknown tenant %', NEW.tenant_id USING ERRCODE = 'HD002';
    END IF;
    IF v_paused IS NOT NULL THEN
        -- Raised after the UPDATE, which the error rolls back with the whole write.
        RAISE EXCEPTION 'tenant % is read-only while it moves', NEW.tenant_id
            USING ERRCODE = 'HD005', DETAIL = v_paused::text;
    END IF;
    RETURN NEW;
END
$$;

CREATE FUNCTION events_check_import() RETURNS trigger
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, public
AS $$
DECLARE
    v_link text := nullif(current_setting('app.import_link', true), '');
    v_tenant uuid := nullif(current_setting('app.tenant_id', true), '')::uuid;
    v_prev_seq bigint;
    v_prev_hash bytea;
    v_bad bigint;
    v_expected bigint;
    v_last_seq bigint;
    v_last_hash bytea;
BEGIN
    IF current_setting('app.importing', true) IS DISTINCT FROM 'on' THEN
        RETURN NULL;
    END IF;
    IF NOT pg_has_role(session_user, 'helpdesk_owner', 'MEMBER') THEN
        RAISE EXCEPTION 'only the owner role imports events' USING ERRCODE = '42501';
    END IF;
    IF v_link IS NULL THEN
        -- Read, not updated: the importer moves the head once, after the last event.
        SELECT h.seq, h.hash INTO v_prev_seq, v_prev_hash FROM tenant_heads h
         WHERE h.tenant_id = v_tenant;
        IF NOT FOUND THEN
            RAISE EXCEPTION 'import into an unknown tenant %', v_tenant USING ERRCODE = 'HD002';
        END IF;
    ELSE
        v_prev_seq := split_part(v_link, ':', 1)::bigint;
        v_prev_hash := decode(split_part(v_link, ':', 2), 'hex');
    END IF;
    -- Rows are of the armed tenant (events_before_insert) and their seqs unique (the
    -- primary key), so in seq order each row's "before" is the row ahead of it.
    SELECT n.seq, n.prev_seq + 1 INTO v_bad, v_expected
      FROM (SELECT e.*,
                   lag(e.seq, 1, v_prev_seq) OVER (ORDER BY e.seq) AS prev_seq,
                   lag(e.hash, 1, v_prev_hash) OVER (ORDER BY e.seq) AS prev_hash
              FROM new_events e) n
     WHERE n.seq IS DISTINCT FROM n.prev_seq + 1
        OR n.hash IS DISTINCT FROM sha256(n.prev_hash || event_canonical(
               n.tenant_id, n.seq, n.stream_id, n.version, n.type, n.schema_version,
               n.data, n.metadata, n.actor_kind, n.actor_id, n.recorded_at))
     ORDER BY n.seq
     LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'imported event % does not continue the chain at seq %',
            v_bad, v_expected USING ERRCODE = 'HD006';
    END IF;
    SELECT e.seq, e.hash INTO v_last_seq, v_last_hash FROM new_events e
     ORDER BY e.seq DESC LIMIT 1;
    IF FOUND THEN
        PERFORM set_config('app.import_link', v_last_seq || ':' || encode(v_last_hash, 'hex'),
                           true);
    END IF;
    RETURN NULL;
END
$$;

-- Named to fire first among the statement triggers on events (they fire by name).
CREATE TRIGGER events_check_import AFTER INSERT ON events
    REFERENCING NEW TABLE AS new_events
    FOR EACH STATEMENT EXECUTE FUNCTION events_check_import();
