-- OpenID Connect sign-in for staff (docs/sign-in.md): a tenant's provider, and the
-- sign-ins under way (state, nonce and PKCE verifier between the redirect to the
-- provider and its callback).

-- At most one provider per tenant. The client secret is sealed by the key-encryption
-- key (Keyring.wrap, bound to the tenant and the row's id) and named by its
-- fingerprint (kek), as mailbox passwords are; it is never returned.
CREATE TABLE oidc_providers (
    tenant_id       uuid NOT NULL REFERENCES tenants (id),
    id              uuid NOT NULL,
    label           text NOT NULL,
    issuer          text NOT NULL,
    client_id       text NOT NULL,
    client_secret   bytea NOT NULL,
    kek             text NOT NULL,
    allowed_domain  text,
    create_agents   boolean NOT NULL DEFAULT false,
    version         integer NOT NULL CHECK (version >= 1),
    created_at      timestamptz NOT NULL,
    updated_at      timestamptz NOT NULL,
    PRIMARY KEY (tenant_id)
);

-- A sign-in between its start and its callback, found by the sha256 of its state and
-- spent once (used_at). The nonce is kept as its sha256; the PKCE verifier as is, for
-- the token request (worth nothing without the provider's code).
CREATE TABLE oidc_attempts (
    tenant_id      uuid NOT NULL REFERENCES tenants (id),
    state_hash     bytea NOT NULL,
    nonce_hash     bytea NOT NULL,
    code_verifier  text NOT NULL,
    redirect_uri   text NOT NULL,
    created_at     timestamptz NOT NULL,
    expires_at     timestamptz NOT NULL,
    used_at        timestamptz,
    PRIMARY KEY (tenant_id, state_hash)
);
CREATE INDEX oidc_attempts_expiry ON oidc_attempts (tenant_id, expires_at);

DO $$
DECLARE t text;
BEGIN
    FOREACH t IN ARRAY ARRAY['oidc_providers', 'oidc_attempts'] LOOP
        EXECUTE format('ALTER TABLE %I ENABLE ROW LEVEL SECURITY', t);
        EXECUTE format('ALTER TABLE %I FORCE ROW LEVEL SECURITY', t);
        EXECUTE format($p$CREATE POLICY tenant_isolation ON %I
            USING (tenant_id = nullif(current_setting('app.tenant_id', true), '')::uuid)
            WITH CHECK (tenant_id = nullif(current_setting('app.tenant_id', true), '')::uuid)$p$, t);
    END LOOP;
END
$$;
-- A provider is removed by its admin; expired attempts are swept by the next start.
GRANT SELECT, INSERT, UPDATE, DELETE ON oidc_providers, oidc_attempts TO helpdesk_runtime;
