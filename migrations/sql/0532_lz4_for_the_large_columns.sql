-- A ticket's row holds its folded state and its API document, a few kilobytes of
-- JSON, and each command writes both again; a ticket's search vectors are written
-- again by every message. Past about 2 kB a row's widest values are compressed, with
-- pglz by default, which showed among the hottest functions of a write in a profile.
-- lz4 compresses several times faster at a similar ratio. Values already stored keep
-- their compression until they are next written.
ALTER TABLE tickets ALTER COLUMN state_json SET COMPRESSION lz4,
                    ALTER COLUMN view SET COMPRESSION lz4;
ALTER TABLE search_documents ALTER COLUMN document SET COMPRESSION lz4,
                             ALTER COLUMN staff_document SET COMPRESSION lz4;
ALTER TABLE events ALTER COLUMN data SET COMPRESSION lz4;
