-- Inbound mail by IMAP (handlers/mail_poll.py): a mailbox's server and folder, its
-- password sealed like the SMTP one (its own key-encryption key's fingerprint, as the
-- two are set apart), and the checkpoint the poller keeps: the folder's UIDVALIDITY
-- and the last UID taken in, committed in the transaction of that mail's ticket.
ALTER TABLE mailboxes
    ADD COLUMN imap             jsonb,
    ADD COLUMN imap_password    bytea,
    ADD COLUMN imap_kek         text,
    ADD COLUMN imap_uidvalidity bigint,
    ADD COLUMN imap_last_uid    bigint NOT NULL DEFAULT 0;
