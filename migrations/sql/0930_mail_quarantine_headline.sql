-- A quarantined mail's sender and subject (domain.mail.headline: its headers as far as
-- they can be read), what an admin tells the quarantined mail apart by. Sealed as the
-- raw mail is, by the key-encryption key, bound to the tenant and the quarantined mail
-- (they are the mail's words and addresses), and named by a fingerprint of its own,
-- since a key rotation or a tenant move re-wraps each sealed value by its kek column
-- (handlers/sealed_values.py). NULL for mail quarantined before, whose listing shows
-- neither.
ALTER TABLE mail_quarantine ADD COLUMN headline bytea, ADD COLUMN headline_kek text;
