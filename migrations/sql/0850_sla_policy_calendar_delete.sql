-- A deleted SLA policy or calendar leaves its read-model row (its stream keeps what it
-- was: SlaPolicyDeleted, CalendarDeleted). A calendar's hours at every version stay in
-- sla_calendar_versions, which keeps no DELETE: clocks that ran on them are judged on them.
GRANT DELETE ON sla_policies TO helpdesk_runtime;
GRANT DELETE ON sla_calendars TO helpdesk_runtime;
