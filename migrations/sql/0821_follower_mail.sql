-- Followers' mail (docs/email.md): an agent following a ticket is mailed, through the
-- notification queue, when someone else adds a message to it, changes its state or
-- assigns it. Made in the command's own transaction (handlers.mail_notify
-- queue_follower_notices) and sent by the `mail.notify` job after the commit, like the
-- others; a kind of its own, `follow`.
ALTER TABLE mail_notifications DROP CONSTRAINT mail_notifications_kind_check;
ALTER TABLE mail_notifications ADD CONSTRAINT mail_notifications_kind_check
    CHECK (kind IN ('invitation', 'portal_link', 'acknowledgement', 'assignment', 'breach',
                    'rule', 'follow'));
