-- Satisfaction rating links: staff produce a single-use link for a solved ticket's
-- requester (only the token's sha256 is stored, as for portal password links); the
-- requester spends it once to rate the ticket. The rating itself is an event on the
-- ticket stream (SatisfactionRated); this table only keeps a link from being spent
-- twice. Tenant table like the others: tenant_id first in every key, row-level
-- security on it; nothing is deleted (links are spent).

CREATE TABLE satisfaction_links (
    tenant_id    uuid NOT NULL REFERENCES tenants (id),
    id           uuid NOT NULL,
    ticket_id    uuid NOT NULL,
    contact_id   uuid NOT NULL,
    token_hash   bytea NOT NULL,
    created_at   timestamptz NOT NULL,
    expires_at   timestamptz NOT NULL,
    spent_at     timestamptz,
    PRIMARY KEY (tenant_id, id),
    UNIQUE (tenant_id, token_hash),
    FOREIGN KEY (tenant_id, contact_id) REFERENCES contacts (tenant_id, id)
);

ALTER TABLE satisfaction_links ENABLE ROW LEVEL SECURITY;
ALTER TABLE satisfaction_links FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON satisfaction_links
    USING (tenant_id = nullif(current_setting('app.tenant_id', true), '')::uuid)
    WITH CHECK (tenant_id = nullif(current_setting('app.tenant_id', true), '')::uuid);

GRANT SELECT, INSERT, UPDATE ON satisfaction_links TO helpdesk_runtime;
