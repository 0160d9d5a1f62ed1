-- Readiness counts the mailboxes that use a mail server (SMTP or IMAP): one with
-- neither, taking mail by its inbound route only (the demo's), keeps mail `dormant`.
CREATE OR REPLACE FUNCTION mail_health()
RETURNS TABLE (mailboxes bigint, failing bigint)
LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = pg_catalog, public
AS $$
    SELECT count(*),
           count(*) FILTER (WHERE m.last_error_at IS NOT NULL
                              AND (m.last_ok_at IS NULL OR m.last_ok_at < m.last_error_at))
      FROM mailboxes m
     WHERE m.smtp IS NOT NULL OR m.imap IS NOT NULL
$$;
REVOKE ALL ON FUNCTION mail_health() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION mail_health() TO helpdesk_runtime;
