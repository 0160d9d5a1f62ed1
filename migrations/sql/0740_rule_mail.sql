-- A rule's send_mail action (docs/rules.md) queues notification mail of its own kind,
-- `rule`: one row per recipient, made in the rule engine's transaction with its
-- checkpoint and sent by the `mail.notify` job after the commit, like the others.
ALTER TABLE mail_notifications DROP CONSTRAINT mail_notifications_kind_check;
ALTER TABLE mail_notifications ADD CONSTRAINT mail_notifications_kind_check
    CHECK (kind IN ('invitation', 'portal_link', 'acknowledgement', 'assignment', 'breach',
                    'rule'));
