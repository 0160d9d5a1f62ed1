-- Failed sign-ins are counted in Postgres, per account and per client address, so a
-- password cannot be guessed as fast as the server answers when there is no Redis
-- (the embedded first run has none). handlers/sign_in_throttle.py holds the rules.
--
-- One row per counted key: the sha256 of what it counts (an account: the kind of
-- sign-in, the tenant as typed and the e-mail; an address), never the e-mail or the
-- address themselves. The keys are counted before the tenant is known (an unknown
-- slug counts as well as a known one), so the table is not a tenant's and has no
-- row-level security: it holds no tenant data, and only hashes. Like every table
-- without a tenant it is read-only to the runtime role, which counts and forgets
-- through the functions below (SECURITY DEFINER, pinned search_path) and nothing else.
CREATE TABLE sign_in_failures (
    key_hash      bytea PRIMARY KEY,
    failures      integer NOT NULL CHECK (failures >= 1),
    last_at       timestamptz NOT NULL,
    blocked_until timestamptz
);

-- Rows of keys that have been quiet for longer than the window are dead weight; the
-- count of one failure deletes a few of them as it goes.
CREATE INDEX sign_in_failures_quiet ON sign_in_failures (last_at);

-- The latest moment any of the keys is blocked until, if one is blocked now.
CREATE FUNCTION sign_in_blocked_until(p_keys bytea[], p_now timestamptz)
RETURNS timestamptz
LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = pg_catalog, public
AS $$
    SELECT max(blocked_until) FROM sign_in_failures
     WHERE key_hash = ANY (p_keys) AND blocked_until > p_now
$$;

-- One more failure of a key: a key quiet for longer than the window starts again at
-- one. The failure that reaches the allowed number blocks the key for the first
-- backoff, each further one for twice the one before, up to the longest (the
-- doubling is capped at 2^20 so the arithmetic stays small). The row lock of the
-- upsert serialises two failures of one key, so neither is lost. Then a few rows of
-- keys quiet since before p_forget_before are deleted.
CREATE FUNCTION sign_in_count_failure(p_key bytea, p_now timestamptz, p_window interval,
                                      p_allowed integer, p_backoff interval,
                                      p_longest interval, p_forget_before timestamptz)
RETURNS timestamptz
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, public
AS $$
DECLARE
    counted integer;
    until timestamptz;
BEGIN
    INSERT INTO sign_in_failures AS f (key_hash, failures, last_at)
    VALUES (p_key, 1, p_now)
    ON CONFLICT (key_hash) DO UPDATE
       SET failures = CASE WHEN f.last_at < p_now - p_window THEN 1 ELSE f.failures + 1 END,
           last_at = p_now
    RETURNING failures INTO counted;
    IF counted >= p_allowed THEN
        until := p_now + least(p_longest, p_backoff * power(2, least(20, counted - p_allowed)));
    END IF;
    UPDATE sign_in_failures SET blocked_until = until WHERE key_hash = p_key;
    DELETE FROM sign_in_failures
     WHERE key_hash IN (SELECT key_hash FROM sign_in_failures
                         WHERE last_at < p_forget_before
                           AND (blocked_until IS NULL OR blocked_until < p_forget_before)
                         LIMIT 100);
    RETURN until;
END
$$;

-- A right password: the account's failures are forgiven.
CREATE FUNCTION sign_in_forget(p_key bytea)
RETURNS void
LANGUAGE sql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, public
AS $$
    DELETE FROM sign_in_failures WHERE key_hash = p_key
$$;

REVOKE ALL ON TABLE sign_in_failures FROM PUBLIC;
REVOKE ALL ON FUNCTION sign_in_blocked_until(bytea[], timestamptz) FROM PUBLIC;
REVOKE ALL ON FUNCTION sign_in_count_failure(bytea, timestamptz, interval, integer, interval,
                                             interval, timestamptz) FROM PUBLIC;
REVOKE ALL ON FUNCTION sign_in_forget(bytea) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION sign_in_blocked_until(bytea[], timestamptz) TO helpdesk_runtime;
GRANT EXECUTE ON FUNCTION sign_in_count_failure(bytea, timestamptz, interval, integer,
                                                interval, interval, timestamptz)
    TO helpdesk_runtime;
GRANT EXECUTE ON FUNCTION sign_in_forget(bytea) TO helpdesk_runtime;
