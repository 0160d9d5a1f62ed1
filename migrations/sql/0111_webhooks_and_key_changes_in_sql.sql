-- Two things the write path used to do from Python, now done by the database.
--
-- 1. Webhook deliveries. Appends go to the server in the COMMIT's own message (so the
--    tenant head lock is held for server time only), which leaves no moment for
--    Python to enqueue deliveries between the append and the commit. This statement
--    trigger does it in the appending statement: one job per inserted event that the
--    tenant's enabled webhook subscribes to ('*' for all), deduplicated by the event's
--    seq. The job names the event; the delivery reads it from the store when it runs,
--    so a retry always sends the event as it is stored now. It costs one primary-key
--    probe of `webhooks` per appending statement when the tenant has none.
--    max_attempts here is only the row's default: the job kind's registered budget
--    (WEBHOOK_MAX_ATTEMPTS) decides.
CREATE FUNCTION events_schedule_webhooks() RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, public
AS $$
BEGIN
    INSERT INTO jobs (tenant_id, kind, dedupe_key, payload, run_at, max_attempts)
    SELECT n.tenant_id, 'webhook.deliver', 'webhook:' || n.seq,
           jsonb_build_object('seq', n.seq), now(), 8
      FROM new_events n
      JOIN webhooks w ON w.tenant_id = n.tenant_id AND w.enabled
     WHERE '*' = ANY (w.event_types) OR n.type = ANY (w.event_types)
     ORDER BY n.seq;
    RETURN NULL;
END
$$;

CREATE TRIGGER events_schedule_webhooks AFTER INSERT ON events
    REFERENCING NEW TABLE AS new_events
    FOR EACH STATEMENT EXECUTE FUNCTION events_schedule_webhooks();

-- 2. API key cache invalidation. Every API process keeps the principals of keys it
--    saw recently (api/http/keycache.py). A change to any key or agent tells them all,
--    in the changing transaction, so a revocation or a deactivation takes effect in
--    every process as soon as it commits. Such changes are rare; the notification is
--    sent inside the transaction on purpose, so it cannot be lost between commit and
--    send.
CREATE FUNCTION key_holders_changed() RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, public
AS $$
BEGIN
    PERFORM pg_notify('helpdesk_keys', TG_TABLE_NAME);
    RETURN NULL;
END
$$;

CREATE TRIGGER api_keys_changed AFTER UPDATE OR DELETE ON api_keys
    FOR EACH STATEMENT EXECUTE FUNCTION key_holders_changed();
CREATE TRIGGER agents_changed AFTER UPDATE OR DELETE ON agents
    FOR EACH STATEMENT EXECUTE FUNCTION key_holders_changed();

REVOKE ALL ON FUNCTION events_schedule_webhooks() FROM PUBLIC;
REVOKE ALL ON FUNCTION key_holders_changed() FROM PUBLIC;
