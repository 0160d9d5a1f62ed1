-- The whole desk as of any moment: every version a ticket had, with the range of the
-- tenant's sequence it was valid in, so a list "as of seq N" is an index walk over
-- the versions valid at N rather than a replay (projections/ticket_versions.py).
--
-- A command's inline projection (projections/inline.py) writes one row per ticket
-- event it applies, beside the ticket's row and with the same list columns and the
-- document the API showed, before the events are appended. The event's seq is only
-- known once the insert trigger of `events` assigned it, so the trigger below stamps
-- it: the version the event made is valid from its seq, the version before it until
-- then. valid_to_seq is the largest bigint while the version is the ticket's current
-- one, so "valid at N" is two comparisons with no NULL case.
--
-- created_max, on a ticket's first version kept: the latest `created_at` of any ticket
-- whose first kept version is valid from this one's seq or before. The list is newest first; an as-of list starts its walk
-- at the created_max of the last ticket opened by N, and so skips the tickets opened
-- since without visiting them (their created_at, from the command's clock, need not
-- follow seq, hence a running maximum rather than the last one's own created_at). It
-- is written under the tenant's head lock (held by the appending statement), so the
-- running maximum sees every ticket opened before.

CREATE TABLE ticket_versions (
    tenant_id        uuid NOT NULL REFERENCES tenants (id),
    id               uuid NOT NULL,
    version          integer NOT NULL CHECK (version >= 1),
    valid_from_seq   bigint,
    valid_to_seq     bigint NOT NULL DEFAULT 9223372036854775807,
    created_max      timestamptz,
    state            text NOT NULL,
    priority         text NOT NULL,
    source           text NOT NULL,
    assignee         uuid,
    tags             text[] NOT NULL DEFAULT '{}',
    group_id         uuid,
    contact_id       uuid,
    organization_id  uuid,
    fields           jsonb NOT NULL DEFAULT '{}',
    created_at       timestamptz NOT NULL,
    updated_at       timestamptz NOT NULL,
    view             json NOT NULL,
    PRIMARY KEY (tenant_id, id, version)
);

-- The as-of list: newest first, the validity range read from the index itself.
CREATE INDEX ticket_versions_keyset
    ON ticket_versions (tenant_id, created_at, id) INCLUDE (valid_from_seq, valid_to_seq);
-- Where an as-of list starts: the last ticket opened at or before N.
CREATE INDEX ticket_versions_opened
    ON ticket_versions (tenant_id, valid_from_seq) INCLUDE (created_max)
    WHERE created_max IS NOT NULL;

ALTER TABLE ticket_versions ENABLE ROW LEVEL SECURITY;
ALTER TABLE ticket_versions FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON ticket_versions
    USING (tenant_id = nullif(current_setting('app.tenant_id', true), '')::uuid)
    WITH CHECK (tenant_id = nullif(current_setting('app.tenant_id', true), '')::uuid);
-- Staff read the desk's past; a customer's or a widget's transaction writes the
-- versions its commands make, and reads none but while it appends (the trigger
-- below stamps them then; append_events marks it, migration 0463).
CREATE POLICY customer_scope ON ticket_versions AS RESTRICTIVE FOR SELECT
    USING ((current_setting('app.actor_kind', true) IS DISTINCT FROM 'customer'
            AND current_setting('app.actor_kind', true) IS DISTINCT FROM 'widget')
           OR current_setting('app.appending', true) = 'on');
GRANT SELECT, INSERT, UPDATE ON ticket_versions TO helpdesk_runtime;

-- One primary-key probe per appended event (a miss for events of other streams), and
-- for a ticket's event a second to close the version before it.
CREATE FUNCTION events_stamp_ticket_versions() RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, public
AS $$
BEGIN
    IF NEW.version = 1 THEN
        UPDATE ticket_versions v
           SET valid_from_seq = NEW.seq,
               created_max = greatest(v.created_at, (
                   SELECT p.created_max FROM ticket_versions p
                    WHERE p.tenant_id = NEW.tenant_id AND p.created_max IS NOT NULL
                      AND p.valid_from_seq < NEW.seq
                    ORDER BY p.valid_from_seq DESC LIMIT 1))
         WHERE v.tenant_id = NEW.tenant_id AND v.id = NEW.stream_id AND v.version = 1;
    ELSE
        UPDATE ticket_versions v
           SET valid_from_seq = CASE WHEN v.version = NEW.version THEN NEW.seq
                                     ELSE v.valid_from_seq END,
               valid_to_seq = CASE WHEN v.version = NEW.version - 1 THEN NEW.seq
                                   ELSE v.valid_to_seq END
         WHERE v.tenant_id = NEW.tenant_id AND v.id = NEW.stream_id
           AND v.version IN (NEW.version - 1, NEW.version);
    END IF;
    RETURN NULL;
END
$$;

CREATE TRIGGER events_stamp_ticket_versions AFTER INSERT ON events
    FOR EACH ROW EXECUTE FUNCTION events_stamp_ticket_versions();

REVOKE ALL ON FUNCTION events_stamp_ticket_versions() FROM PUBLIC;

-- The tickets there are now, each as its current version, valid from the seq of the
-- event that made it: their earlier versions were never kept, so a list as of a seq
-- before a ticket's last event before this migration does not show it (docs/as-of.md).
-- Each is a first kept version, with its running maximum of created_at in seq order.
INSERT INTO ticket_versions (tenant_id, id, version, valid_from_seq, created_max, state,
                             priority, source, assignee, tags, group_id, contact_id,
                             organization_id, fields, created_at, updated_at, view)
SELECT t.tenant_id, t.id, t.version, e.seq,
       max(t.created_at) OVER (PARTITION BY t.tenant_id ORDER BY e.seq),
       t.state, t.priority, t.source, t.assignee, t.tags, t.group_id, t.contact_id,
       t.organization_id, t.fields, t.created_at, t.updated_at, t.view
  FROM tickets t
  JOIN events e ON e.tenant_id = t.tenant_id AND e.stream_id = t.id AND e.version = t.version
 WHERE t.view IS NOT NULL;
