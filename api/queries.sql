-- name: role_safety --
-- (no arguments) what would make row-level security silently not apply to us
SELECT r.rolname AS role,
       r.rolsuper AS superuser,
       r.rolbypassrls AS bypassrls,
       pg_has_role(current_user, 'helpdesk_owner', 'MEMBER') AS owner_member,
       EXISTS (SELECT 1 FROM pg_class c
                WHERE c.relowner = r.oid AND c.relnamespace = 'public'::regnamespace) AS owns
  FROM pg_roles r
 WHERE r.rolname = current_user

-- name: migrated --
-- (no arguments)
SELECT to_regclass('public.schema_migrations') IS NOT NULL
   AND to_regrole('helpdesk_owner') IS NOT NULL

-- name: cursor_secret --
-- (no arguments)
SELECT value FROM instance_secrets WHERE name = 'cursor'

-- name: access_token_secret --
-- (no arguments)
SELECT value FROM instance_secrets WHERE name = 'access_token'

-- name: data_key_secret --
-- (no arguments)
SELECT value FROM instance_secrets WHERE name = 'data_key'
