-- Crypto-shredding of personal data: one data key per (tenant, data subject), wrapped
-- by the key-encryption key (DATA_KEY, or the 'data_key' instance secret below).
-- Erasing a subject sets ``wrapped`` to NULL and keeps the row as a tombstone, so a
-- later append for the same subject cannot quietly make a new key (it is refused).
CREATE TABLE data_keys (
    tenant_id   uuid NOT NULL REFERENCES tenants (id),
    subject_id  uuid NOT NULL,
    -- nonce (12 bytes) || AES-256-GCM ciphertext of the 32-byte data key; NULL: erased.
    wrapped     bytea CHECK (wrapped IS NULL OR length(wrapped) = 60),
    created_at  timestamptz NOT NULL DEFAULT now(),
    erased_at   timestamptz,
    CHECK ((wrapped IS NULL) = (erased_at IS NOT NULL)),
    PRIMARY KEY (tenant_id, subject_id)
);

ALTER TABLE data_keys ENABLE ROW LEVEL SECURITY;
ALTER TABLE data_keys FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON data_keys
    USING (tenant_id = nullif(current_setting('app.tenant_id', true), '')::uuid)
    WITH CHECK (tenant_id = nullif(current_setting('app.tenant_id', true), '')::uuid);
-- No DELETE: erasure overwrites the wrapped key with NULL (the tombstone above).
GRANT SELECT, INSERT, UPDATE ON data_keys TO helpdesk_runtime;

-- The key-encryption key when DATA_KEY is not set: random, one per database (like
-- 'cursor'). Kept here, it protects against a copy of the events table alone, not
-- against a copy of the whole database: docs/erasure.md says how to keep it outside.
INSERT INTO instance_secrets (name, value)
VALUES ('data_key',
        decode(replace(gen_random_uuid()::text || gen_random_uuid()::text, '-', ''), 'hex'));
