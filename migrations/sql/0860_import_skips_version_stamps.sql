-- A tenant import (`helpdesk tenant import`, migration 0655) inserts events before the
-- tenant's rows, so when its events go in the tenant has no `ticket_versions` row for
-- the stamp trigger (0611, 0641) to find: each event paid two primary-key probes that
-- could only miss, 66 of the 198 ms an import spent on 1,000 events (EXPLAIN ANALYZE,
-- docs/performance.md "Moving a tenant"). The versions arrive with their stamps, as
-- the source's trigger wrote them, among the rows. The condition is the trigger's own
-- WHEN, so an imported event does not even call the function; every other insert is
-- stamped as before.
DROP TRIGGER events_stamp_ticket_versions ON events;
CREATE TRIGGER events_stamp_ticket_versions AFTER INSERT ON events
    FOR EACH ROW
    WHEN (current_setting('app.importing', true) IS DISTINCT FROM 'on')
    EXECUTE FUNCTION events_stamp_ticket_versions();
