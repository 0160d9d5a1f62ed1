-- DKIM signing of a mailbox's outbound mail (docs/email.md): its selector and domain,
-- with the DNS record the key implies (what the API shows), and the private key sealed
-- by the key-encryption key like the mailbox's passwords (bound to the tenant and the
-- mailbox, named by its own fingerprint). NULL: mail goes out unsigned.
ALTER TABLE mailboxes
    ADD COLUMN dkim      jsonb,
    ADD COLUMN dkim_key  bytea,
    ADD COLUMN dkim_kek  text;
