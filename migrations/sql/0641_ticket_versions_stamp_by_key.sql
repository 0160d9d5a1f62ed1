-- The stamp of a ticket event's versions (0611) as two probes of the primary key, one
-- per version: as one UPDATE over `version IN (n - 1, n)` it read every version of the
-- ticket, so a message cost more the longer its thread (tests/integration/
-- test_message_cost.py counts the rows).
CREATE OR REPLACE FUNCTION events_stamp_ticket_versions() RETURNS trigger
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
        UPDATE ticket_versions v SET valid_to_seq = NEW.seq
         WHERE v.tenant_id = NEW.tenant_id AND v.id = NEW.stream_id
           AND v.version = NEW.version - 1;
        UPDATE ticket_versions v SET valid_from_seq = NEW.seq
         WHERE v.tenant_id = NEW.tenant_id AND v.id = NEW.stream_id
           AND v.version = NEW.version;
    END IF;
    RETURN NULL;
END
$$;
