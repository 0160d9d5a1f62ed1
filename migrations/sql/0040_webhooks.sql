-- Outbound webhooks: at most one endpoint per tenant. The secret signs deliveries;
-- the API never returns it. No row (or enabled = false) means nothing is delivered.

CREATE TABLE webhooks (
    tenant_id    uuid PRIMARY KEY REFERENCES tenants (id),
    url          text NOT NULL CHECK (url ~ '^https?://' AND length(url) <= 2000),
    secret       text NOT NULL CHECK (length(secret) BETWEEN 16 AND 200),
    event_types  text[] NOT NULL,
    enabled      boolean NOT NULL DEFAULT true,
    version      integer NOT NULL DEFAULT 1,
    updated_at   timestamptz NOT NULL DEFAULT now()
);

ALTER TABLE webhooks ENABLE ROW LEVEL SECURITY;
ALTER TABLE webhooks FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON webhooks
    USING (tenant_id = nullif(current_setting('app.tenant_id', true), '')::uuid)
    WITH CHECK (tenant_id = nullif(current_setting('app.tenant_id', true), '')::uuid);

GRANT SELECT, INSERT, UPDATE ON webhooks TO helpdesk_runtime;
