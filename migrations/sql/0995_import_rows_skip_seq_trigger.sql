-- An operator's import (`helpdesk tenant import`, migrations 0655 and 0950) no longer
-- calls the row trigger that stamps appends. Since 0950 that trigger only checked an
-- imported row's tenant against the armed one and let it through as given, yet as a
-- PL/pgSQL call per row it took 5-14 ms of a 1,000-event batch's 110-130 ms of
-- execution (EXPLAIN ANALYZE, load average 8; docs/performance.md, "Moving a tenant").
-- Now the trigger's own WHEN leaves imported rows out, as 0860 does for the version
-- stamps, and the statement trigger that checks the chain checks the tenant of every
-- row of the statement in the same query: a row of another tenant, or a statement with
-- no tenant armed, raises 42501 ('event insert outside its tenant context', as before)
-- and inserts nothing; the tenant policy's WITH CHECK holds as well. Appends are
-- stamped exactly as before (the WHEN is the condition the function tested first).

CREATE OR REPLACE FUNCTION events_before_insert() RETURNS trigger
LANGUAGE plpgsql
SECURITY DEFINER
SET search_path = pg_catalog, public
AS $$
DECLARE
    v_tenant uuid := nullif(current_setting('app.tenant_id', true), '')::uuid;
    v_actor_kind text := nullif(current_setting('app.actor_kind', true), '');
    v_actor_id text := nullif(current_setting('app.actor_id', true), '');
    v_paused integer;
BEGIN
    -- Imported rows never come here (the trigger's WHEN): events_check_import checks
    -- them, their tenant included, before the statement ends.
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

DROP TRIGGER events_assign_seq ON events;
CREATE TRIGGER events_assign_seq BEFORE INSERT ON events
    FOR EACH ROW
    WHEN (current_setting('app.importing', true) IS DISTINCT FROM 'on')
    EXECUTE FUNCTION events_before_insert();

CREATE OR REPLACE FUNCTION events_check_import() RETURNS trigger
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
    v_foreign boolean;
    v_last_seq bigint;
    v_last_hash bytea;
BEGIN
    IF current_setting('app.importing', true) IS DISTINCT FROM 'on' THEN
        RETURN NULL;
    END IF;
    IF NOT pg_has_role(session_user, 'helpdesk_owner', 'MEMBER') THEN
        RAISE EXCEPTION 'only the owner role imports events' USING ERRCODE = '42501';
    END IF;
    IF v_tenant IS NULL THEN
        RAISE EXCEPTION 'event insert outside its tenant context' USING ERRCODE = '42501';
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
    -- In seq order each row's "before" is the row ahead of it (seqs are unique within
    -- the tenant by the primary key); the first row that is of another tenant or does
    -- not continue the chain fails the statement.
    SELECT n.seq, n.prev_seq + 1, n.tenant_id IS DISTINCT FROM v_tenant
      INTO v_bad, v_expected, v_foreign
      FROM (SELECT e.*,
                   lag(e.seq, 1, v_prev_seq) OVER (ORDER BY e.seq) AS prev_seq,
                   lag(e.hash, 1, v_prev_hash) OVER (ORDER BY e.seq) AS prev_hash
              FROM new_events e) n
     WHERE n.tenant_id IS DISTINCT FROM v_tenant
        OR n.seq IS DISTINCT FROM n.prev_seq + 1
        OR n.hash IS DISTINCT FROM sha256(n.prev_hash || event_canonical(
               n.tenant_id, n.seq, n.stream_id, n.version, n.type, n.schema_version,
               n.data, n.metadata, n.actor_kind, n.actor_id, n.recorded_at))
     ORDER BY n.seq
     LIMIT 1;
    IF FOUND AND v_foreign THEN
        RAISE EXCEPTION 'event insert outside its tenant context' USING ERRCODE = '42501';
    END IF;
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
