-- Files on messages: an upload is received into a blob (its bytes, sealed in chunks
-- under a key of its own), then attached to one message by a ticket command.
--
-- file_blobs   one stored file: its sha256 and size, where its bytes are (chunk rows
--              here, or a file in the storage directory), and its own key, wrapped by
--              the key-encryption key while it is on no contact's ticket (subject_id
--              NULL) and by the data key of the ticket's requester once it is. Erasing
--              that contact destroys the data key (0400) and deletes the blob's rows.
-- file_chunks  a blob's bytes in Postgres, each chunk sealed (AES-256-GCM) on its own.
-- uploads      what a caller uploaded (name, type, size, hash) and, once attached, the
--              ticket and message it is on; an attachment is an attached upload.
--
-- Tenant tables like the others. A transaction acting as a customer (portal) or a
-- widget session sees its own unattached uploads and the files of public messages on
-- the tickets it sees (the tickets' own scopes, 0460 and 0470, say which), and the
-- blobs and chunks of those; nothing else.

CREATE TABLE file_blobs (
    tenant_id     uuid NOT NULL REFERENCES tenants (id),
    id            uuid NOT NULL,
    -- 'receiving' while an upload streams in; 'stored' once its last chunk is in.
    state         text NOT NULL CHECK (state IN ('receiving', 'stored')),
    storage       text NOT NULL CHECK (storage IN ('postgres', 'filesystem')),
    chunk_size    integer NOT NULL CHECK (chunk_size > 0),
    sha256        bytea CHECK (length(sha256) = 32),
    size          bigint CHECK (size > 0),
    subject_id    uuid,
    wrapped_key   bytea NOT NULL,
    kek           text,
    created_by_kind text NOT NULL,
    created_by_id   text NOT NULL,
    created_at    timestamptz NOT NULL,
    PRIMARY KEY (tenant_id, id),
    CHECK (state = 'receiving' OR (sha256 IS NOT NULL AND size IS NOT NULL))
);
-- Deduplication: a contact's ticket that gets a file it already holds shares its blob.
CREATE INDEX file_blobs_subject_hash ON file_blobs (tenant_id, subject_id, sha256)
    WHERE subject_id IS NOT NULL;
CREATE INDEX file_blobs_created ON file_blobs (tenant_id, created_at);

CREATE TABLE file_chunks (
    tenant_id   uuid NOT NULL,
    blob_id     uuid NOT NULL,
    n           integer NOT NULL CHECK (n >= 0),
    data        bytea NOT NULL,
    PRIMARY KEY (tenant_id, blob_id, n),
    FOREIGN KEY (tenant_id, blob_id) REFERENCES file_blobs (tenant_id, id) ON DELETE CASCADE
);
-- Ciphertext does not compress: stored out of line as it is, without trying.
ALTER TABLE file_chunks ALTER COLUMN data SET STORAGE EXTERNAL;

CREATE TABLE uploads (
    tenant_id     uuid NOT NULL REFERENCES tenants (id),
    id            uuid NOT NULL,
    -- NULL once the contact whose ticket it is on was erased.
    blob_id       uuid,
    name          text NOT NULL CHECK (length(name) <= 255),
    content_type  text NOT NULL CHECK (length(content_type) <= 127),
    size          bigint NOT NULL CHECK (size > 0),
    sha256        bytea NOT NULL CHECK (length(sha256) = 32),
    uploaded_by_kind text NOT NULL,
    uploaded_by_id   text NOT NULL,
    created_at    timestamptz NOT NULL,
    ticket_id     uuid,
    message_id    uuid,
    visibility    text CHECK (visibility IN ('public', 'internal')),
    attached_at   timestamptz,
    PRIMARY KEY (tenant_id, id),
    FOREIGN KEY (tenant_id, blob_id) REFERENCES file_blobs (tenant_id, id),
    CHECK ((ticket_id IS NULL) = (attached_at IS NULL)
           AND (ticket_id IS NULL) = (message_id IS NULL)
           AND (ticket_id IS NULL) = (visibility IS NULL))
);
CREATE INDEX uploads_ticket ON uploads (tenant_id, ticket_id) WHERE ticket_id IS NOT NULL;
CREATE INDEX uploads_unattached ON uploads (tenant_id, created_at) WHERE ticket_id IS NULL;
CREATE INDEX uploads_blob ON uploads (tenant_id, blob_id);

-- A message's files as its event carries them (id, name, size, type, sha256); NULL for
-- a message without any, so those are written as before.
ALTER TABLE messages ADD COLUMN attachments jsonb;

ALTER TABLE file_blobs ENABLE ROW LEVEL SECURITY;
ALTER TABLE file_blobs FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON file_blobs
    USING (tenant_id = nullif(current_setting('app.tenant_id', true), '')::uuid)
    WITH CHECK (tenant_id = nullif(current_setting('app.tenant_id', true), '')::uuid);
ALTER TABLE file_chunks ENABLE ROW LEVEL SECURITY;
ALTER TABLE file_chunks FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON file_chunks
    USING (tenant_id = nullif(current_setting('app.tenant_id', true), '')::uuid)
    WITH CHECK (tenant_id = nullif(current_setting('app.tenant_id', true), '')::uuid);
ALTER TABLE uploads ENABLE ROW LEVEL SECURITY;
ALTER TABLE uploads FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON uploads
    USING (tenant_id = nullif(current_setting('app.tenant_id', true), '')::uuid)
    WITH CHECK (tenant_id = nullif(current_setting('app.tenant_id', true), '')::uuid);

GRANT SELECT, INSERT, UPDATE, DELETE ON file_blobs, file_chunks, uploads TO helpdesk_runtime;

-- Whether the armed actor is a portal contact or a widget session (the scoped actors).
-- Written as "IS DISTINCT FROM" for the planner's sake, as 0460 explains.
CREATE FUNCTION acting_scoped() RETURNS boolean
    LANGUAGE sql STABLE PARALLEL SAFE AS $$
    SELECT coalesce(current_setting('app.actor_kind', true) IN ('customer', 'widget'), false)
$$;

-- Restrictive, for every command: a scoped actor's own unattached uploads, and the
-- files of public messages on the tickets it may see (the EXISTS reads tickets under
-- their own contact and widget scopes).
CREATE POLICY customer_scope ON uploads AS RESTRICTIVE
    USING (NOT acting_scoped()
           OR (ticket_id IS NULL
               AND uploaded_by_kind = current_setting('app.actor_kind', true)
               AND uploaded_by_id = current_setting('app.actor_id', true))
           OR (visibility = 'public'
               AND EXISTS (SELECT 1 FROM tickets t
                            WHERE t.tenant_id = uploads.tenant_id
                              AND t.id = uploads.ticket_id)));

-- Blobs: the ones the actor is receiving, and those of the uploads it sees. Not for
-- INSERT (a blob is written before any upload names it; the row names its writer).
CREATE POLICY customer_scope_read ON file_blobs AS RESTRICTIVE FOR SELECT
    USING (NOT acting_scoped()
           OR (created_by_kind = current_setting('app.actor_kind', true)
               AND created_by_id = current_setting('app.actor_id', true))
           OR EXISTS (SELECT 1 FROM uploads u
                       WHERE u.tenant_id = file_blobs.tenant_id AND u.blob_id = file_blobs.id));
CREATE POLICY customer_scope_update ON file_blobs AS RESTRICTIVE FOR UPDATE
    USING (NOT acting_scoped()
           OR (created_by_kind = current_setting('app.actor_kind', true)
               AND created_by_id = current_setting('app.actor_id', true))
           OR EXISTS (SELECT 1 FROM uploads u
                       WHERE u.tenant_id = file_blobs.tenant_id AND u.blob_id = file_blobs.id));
CREATE POLICY customer_scope_delete ON file_blobs AS RESTRICTIVE FOR DELETE
    USING (NOT acting_scoped());
CREATE POLICY customer_scope_read ON file_chunks AS RESTRICTIVE FOR SELECT
    USING (NOT acting_scoped()
           OR EXISTS (SELECT 1 FROM file_blobs b
                       WHERE b.tenant_id = file_chunks.tenant_id AND b.id = file_chunks.blob_id));
CREATE POLICY customer_scope_update ON file_chunks AS RESTRICTIVE FOR UPDATE
    USING (NOT acting_scoped());
CREATE POLICY customer_scope_delete ON file_chunks AS RESTRICTIVE FOR DELETE
    USING (NOT acting_scoped());
