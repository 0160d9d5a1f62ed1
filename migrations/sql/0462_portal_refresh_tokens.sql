-- Customers keep signed in to the portal as staff do: a portal session is the family of
-- refresh tokens it rotates through, with the same rules (handlers/sessions.py). The
-- refresh_tokens table of 0450 now holds both kinds: a token belongs to exactly one
-- session, an agent's (session_id) or a contact's (contact_session_id), each a foreign
-- key carrying tenant_id. A portal session's expires_at is its absolute cap, as a
-- staff session's is; last_used_at and revoked_reason are kept as for staff.
--
-- Tenant rules unchanged: tenant_id first in every key and index, row-level security
-- already on both tables, no delete grant.

ALTER TABLE contact_sessions ADD COLUMN last_used_at timestamptz;
UPDATE contact_sessions SET last_used_at = created_at;
ALTER TABLE contact_sessions ALTER COLUMN last_used_at SET NOT NULL;
-- 'merged': the contact was merged into another, whose sessions are its own.
ALTER TABLE contact_sessions ADD COLUMN revoked_reason text
    CHECK (revoked_reason IN ('sign_out', 'replay', 'merged'));

ALTER TABLE refresh_tokens ALTER COLUMN session_id DROP NOT NULL;
ALTER TABLE refresh_tokens ADD COLUMN contact_session_id uuid;
ALTER TABLE refresh_tokens ADD CONSTRAINT refresh_tokens_contact_session_fkey
    FOREIGN KEY (tenant_id, contact_session_id) REFERENCES contact_sessions (tenant_id, id);
ALTER TABLE refresh_tokens ADD CONSTRAINT refresh_tokens_one_session
    CHECK (num_nonnulls(session_id, contact_session_id) = 1);
CREATE INDEX refresh_tokens_contact_session ON refresh_tokens (tenant_id, contact_session_id)
    WHERE contact_session_id IS NOT NULL;
