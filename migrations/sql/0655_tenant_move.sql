-- Moving a tenant to another database (`helpdesk tenant export` / `import`,
-- docs/operations.md "Moving a tenant").
--
-- 1. A tenant's writes can be paused for the cut-over: while
--    `tenant_heads.paused_retry_after` is set, every event insert of the tenant is
--    refused with HD005 (DETAIL: the seconds a client should wait), which the API
--    answers 503 with `Retry-After`. The check rides on the head row's own UPDATE
--    (`RETURNING`), so a write costs nothing more for it; reads never touch it.
-- 2. An operator's import inserts events as they were recorded: its seq, actor,
--    recorded_at and hash are kept, not stamped. Only a login that is a member of the
--    owner role may arm `app.importing` (the runtime role is not), and the trigger
--    still computes each event's hash from the one before it (the first from the
--    tenant's head) and compares it with the one given, so an import cannot bring in
--    a chain that does not verify or skips a seq. (The owner could alter the tables
--    by hand all the same; `helpdesk audit verify` is what catches that.) The
--    importer moves the head to the last event once they are in. A paused tenant can be imported into (the pause
--    moves with it).
ALTER TABLE tenant_heads
    ADD COLUMN paused_retry_after integer CHECK (paused_retry_after BETWEEN 1 AND 86400);

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
    v_hash bytea;
    v_link text;
    v_prev_seq bigint;
BEGIN
    IF v_tenant IS NULL OR NEW.tenant_id IS DISTINCT FROM v_tenant THEN
        RAISE EXCEPTION 'event insert outside its tenant context'
            USING ERRCODE = '42501';
    END IF;
    IF current_setting('app.importing', true) = 'on' THEN
        IF NOT pg_has_role(session_user, 'helpdesk_owner', 'MEMBER') THEN
            RAISE EXCEPTION 'only the owner role imports events' USING ERRCODE = '42501';
        END IF;
        -- The link is carried from row to row in `app.import_link` (seq:hash), and
        -- starts at the head row, which is read, not updated: updating one row once per
        -- event in one transaction leaves a chain of versions that every update walks,
        -- and looking the previous event up is at the mercy of a fresh table's plan.
        -- The importer moves the head once, after the last event (`import_head`).
        v_link := nullif(current_setting('app.import_link', true), '');
        IF v_link IS NULL THEN
            SELECT h.seq, h.hash INTO v_prev_seq, v_hash FROM tenant_heads h
             WHERE h.tenant_id = NEW.tenant_id;
            IF NOT FOUND THEN
                RAISE EXCEPTION 'import into an unknown tenant %', NEW.tenant_id
                    USING ERRCODE = 'HD002';
            END IF;
        ELSE
            v_prev_seq := split_part(v_link, ':', 1)::bigint;
            v_hash := decode(split_part(v_link, ':', 2), 'hex');
        END IF;
        IF NEW.seq IS DISTINCT FROM v_prev_seq + 1 OR NEW.hash IS DISTINCT FROM sha256(
                v_hash || event_canonical(
                    NEW.tenant_id, NEW.seq, NEW.stream_id, NEW.version, NEW.type,
                    NEW.schema_version, NEW.data, NEW.metadata, NEW.actor_kind,
                    NEW.actor_id, NEW.recorded_at)) THEN
            RAISE EXCEPTION 'imported event % does not continue the chain at seq %',
                NEW.seq, v_prev_seq + 1 USING ERRCODE = 'HD006';
        END IF;
        PERFORM set_config('app.import_link', NEW.seq || ':' || encode(NEW.hash, 'hex'), true);
        RETURN NEW;
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
