-- Each data key names the key-encryption key that wraps it, by a fingerprint (16 hex
-- characters of a hash of the derived key: it says nothing about the key). A rotation
-- re-wraps the rows still named by the previous key (`helpdesk keys rotate`); a
-- process whose DATA_KEY wraps none of the fingerprints in use refuses to start.
-- NULL: a row wrapped before rows named their key (the rotation names it), or a
-- tombstone.
ALTER TABLE data_keys ADD COLUMN kek text CHECK (kek ~ '^[0-9a-f]{16}$');

-- The start-up check counts every tenant's live keys per key-encryption key, before any
-- tenant is known: one SECURITY DEFINER function (like api_key_lookup) that answers
-- fingerprints and counts, never a key, through a read-only policy for the owner role.
CREATE POLICY owner_census ON data_keys FOR SELECT TO helpdesk_owner USING (true);

CREATE FUNCTION data_key_census()
RETURNS TABLE (kek text, keys bigint)
LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = pg_catalog, public
AS $$
    SELECT d.kek, count(*) FROM data_keys d WHERE d.wrapped IS NOT NULL GROUP BY d.kek
$$;

REVOKE ALL ON FUNCTION data_key_census() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION data_key_census() TO helpdesk_runtime;
