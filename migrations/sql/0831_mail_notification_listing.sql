-- The admins' list of notification mail (GET /v1/mail-notifications: docs/email.md),
-- oldest first, its filters (kind, status, recipient, ticket) narrowing the walk.
CREATE INDEX mail_notifications_listing ON mail_notifications (tenant_id, created_at, id);
