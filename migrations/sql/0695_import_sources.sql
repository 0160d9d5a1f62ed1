-- What an importer made of each record of a source (handlers/zendesk_import.py): one row
-- per (source, kind, source id), naming the row or stream it became. The row is written
-- in the transaction that creates the record, so the unique key is the importer's
-- checkpoint: a rerun, or a restart after a crash, finds what committed and creates
-- nothing twice, and a record whose transaction rolled back is simply done again.
-- `facts` keeps what the source recorded and we do not recompute (a ticket's first
-- reply and resolution times under the source's own SLA clocks).
CREATE TABLE import_sources (
    tenant_id   uuid NOT NULL REFERENCES tenants (id),
    source      text NOT NULL,
    kind        text NOT NULL,
    source_id   text NOT NULL,
    target_id   uuid NOT NULL,
    facts       jsonb NOT NULL DEFAULT '{}'::jsonb,
    imported_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, source, kind, source_id)
);

ALTER TABLE import_sources ENABLE ROW LEVEL SECURITY;
ALTER TABLE import_sources FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON import_sources
    USING (tenant_id = nullif(current_setting('app.tenant_id', true), '')::uuid)
    WITH CHECK (tenant_id = nullif(current_setting('app.tenant_id', true), '')::uuid);
GRANT SELECT, INSERT ON import_sources TO helpdesk_runtime;

-- Imported events (appended under the actor kind `import`, docs/import.md) are history,
-- not news: they schedule no webhook delivery and no mail.
CREATE OR REPLACE FUNCTION events_schedule_webhooks() RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, public
AS $$
BEGIN
    -- The events of one statement are of one tenant: the armed one (events_before_insert).
    IF NOT EXISTS (SELECT 1 FROM webhooks w
                    WHERE w.tenant_id = nullif(current_setting('app.tenant_id', true), '')::uuid
                      AND w.enabled) THEN
        RETURN NULL;
    END IF;
    INSERT INTO jobs (tenant_id, kind, dedupe_key, payload, run_at, max_attempts)
    SELECT n.tenant_id, 'webhook.deliver', 'webhook:' || n.seq,
           jsonb_build_object('seq', n.seq), now(), 8
      FROM new_events n
      JOIN webhooks w ON w.tenant_id = n.tenant_id AND w.enabled
     WHERE ('*' = ANY (w.event_types) OR n.type = ANY (w.event_types))
       AND n.actor_kind <> 'import'
     ORDER BY n.seq;
    RETURN NULL;
END
$$;

CREATE OR REPLACE FUNCTION events_schedule_mail() RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, public
AS $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM mailboxes m
                    WHERE m.tenant_id = nullif(current_setting('app.tenant_id', true), '')::uuid) THEN
        RETURN NULL;
    END IF;
    INSERT INTO jobs (tenant_id, kind, dedupe_key, payload, run_at, max_attempts)
    SELECT n.tenant_id, 'mail.send', 'mail:' || (n.data ->> 'message_id'),
           jsonb_build_object('seq', n.seq, 'ticket_id', n.stream_id), now(), 8
      FROM new_events n
      JOIN mail_threads t ON t.tenant_id = n.tenant_id AND t.ticket_id = n.stream_id
     WHERE n.type = 'MessageAdded'
       AND n.data ->> 'visibility' = 'public'
       AND n.data -> 'author' ->> 'kind' = 'agent'
       AND n.actor_kind <> 'import'
     ORDER BY n.seq;
    RETURN NULL;
END
$$;
