-- A deleted macro or saved view leaves its read-model row (its stream keeps what it
-- was: MacroDeleted, ViewDeleted).
GRANT DELETE ON macros TO helpdesk_runtime;
GRANT DELETE ON saved_views TO helpdesk_runtime;
