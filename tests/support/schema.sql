-- Catalog queries behind tests/support/schema.py, which describes a migrated database.
--
-- Every query covers the schemas the migrations own (not pg_catalog, information_schema,
-- pg_toast or temporary schemas) and skips objects that belong to an extension. Text
-- comes from the pg_get_*def functions and format_type, which render the same on the
-- Postgres versions we run (15 and the embedded 18), unlike pg_dump's output.
--
-- Privileges are exploded per grantee from the object's ACL, or from acldefault() when
-- the ACL was never touched, so a missing REVOKE shows as well as an extra GRANT.
-- owner_default lists what the owner holds by default (it gained MAINTAIN on tables in
-- Postgres 17), so the owner's full set can be rendered as ALL on every version.

-- name: roles --
-- $1 role names
-- pg_auth_members may hold one membership twice from two grantors (Postgres 16+).
SELECT r.rolname, r.rolcanlogin, r.rolsuper, r.rolcreatedb, r.rolcreaterole, r.rolinherit,
       r.rolreplication, r.rolbypassrls, r.rolconnlimit,
       coalesce(r.rolconfig, '{}') AS config,
       ARRAY(SELECT DISTINCT g.rolname
               FROM pg_catalog.pg_auth_members m
               JOIN pg_catalog.pg_roles g ON g.oid = m.roleid
              WHERE m.member = r.oid
              ORDER BY 1) AS member_of
  FROM pg_catalog.pg_roles r
 WHERE r.rolname = ANY ($1::text[])

-- name: schemas --
-- no arguments
SELECT n.nspname AS name, pg_catalog.pg_get_userbyid(n.nspowner) AS owner,
       ARRAY(SELECT ROW(CASE a.grantee WHEN 0 THEN 'PUBLIC'
                        ELSE pg_catalog.pg_get_userbyid(a.grantee) END,
                        a.privilege_type, a.is_grantable)
               FROM pg_catalog.aclexplode(coalesce(n.nspacl,
                        pg_catalog.acldefault('n', n.nspowner))) a) AS grants,
       ARRAY(SELECT a.privilege_type
               FROM pg_catalog.aclexplode(pg_catalog.acldefault('n', n.nspowner)) a
              WHERE a.grantee = n.nspowner) AS owner_default
  FROM pg_catalog.pg_namespace n
 WHERE n.nspname <> 'information_schema' AND n.nspname !~ '^pg_'

-- name: extensions --
-- no arguments
-- The version is left out: it follows the server's packages, not the migrations.
SELECT e.extname AS name, n.nspname AS schema
  FROM pg_catalog.pg_extension e
  JOIN pg_catalog.pg_namespace n ON n.oid = e.extnamespace
 WHERE e.extname <> 'plpgsql'

-- name: relations --
-- no arguments
-- ("char" columns are cast to text throughout: asyncpg reads "char" as bytes.)
-- Tables, partitioned tables, views, materialized views, sequences, foreign tables and
-- composite types. The sequence of an identity or serial column is owned by it
-- (pg_depend 'i' or 'a').
SELECT c.oid, c.oid::pg_catalog.regclass::text AS name, c.relkind::text,
       pg_catalog.pg_get_userbyid(c.relowner) AS owner,
       c.relpersistence::text, c.relrowsecurity, c.relforcerowsecurity,
       coalesce(c.reloptions, '{}') AS options,
       CASE WHEN c.relkind = 'p' THEN pg_catalog.pg_get_partkeydef(c.oid) END AS partition_key,
       CASE WHEN c.relispartition THEN
           (SELECT i.inhparent::pg_catalog.regclass::text FROM pg_catalog.pg_inherits i
             WHERE i.inhrelid = c.oid) || ' ' || pg_catalog.pg_get_expr(c.relpartbound, c.oid)
       END AS partition_of,
       CASE WHEN c.relkind IN ('v', 'm') THEN pg_catalog.pg_get_viewdef(c.oid, true) END
           AS definition,
       CASE WHEN c.relkind = 'S' THEN
           (SELECT pg_catalog.format(
                       '%s START %s INCREMENT %s MINVALUE %s MAXVALUE %s CACHE %s %s',
                       pg_catalog.format_type(s.seqtypid, NULL), s.seqstart, s.seqincrement,
                       s.seqmin, s.seqmax, s.seqcache,
                       CASE WHEN s.seqcycle THEN 'CYCLE' ELSE 'NO CYCLE' END)
              FROM pg_catalog.pg_sequence s WHERE s.seqrelid = c.oid)
       END AS sequence,
       (SELECT d.refobjid::pg_catalog.regclass::text || '.' || pg_catalog.quote_ident(a.attname)
          FROM pg_catalog.pg_depend d
          JOIN pg_catalog.pg_attribute a ON a.attrelid = d.refobjid AND a.attnum = d.refobjsubid
         WHERE c.relkind = 'S' AND d.classid = 'pg_catalog.pg_class'::pg_catalog.regclass
           AND d.objid = c.oid AND d.refclassid = 'pg_catalog.pg_class'::pg_catalog.regclass
           AND d.deptype IN ('a', 'i')) AS owned_by,
       ARRAY(SELECT ROW(CASE a.grantee WHEN 0 THEN 'PUBLIC'
                        ELSE pg_catalog.pg_get_userbyid(a.grantee) END,
                        a.privilege_type, a.is_grantable)
               FROM pg_catalog.aclexplode(coalesce(c.relacl, pg_catalog.acldefault(
                        CASE c.relkind WHEN 'S' THEN 's' ELSE 'r' END::"char", c.relowner))) a)
           AS grants,
       ARRAY(SELECT a.privilege_type
               FROM pg_catalog.aclexplode(pg_catalog.acldefault(
                        CASE c.relkind WHEN 'S' THEN 's' ELSE 'r' END::"char", c.relowner)) a
              WHERE a.grantee = c.relowner) AS owner_default
  FROM pg_catalog.pg_class c
  JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
 WHERE c.relkind IN ('r', 'p', 'v', 'm', 'S', 'f', 'c')
   AND n.nspname <> 'information_schema' AND n.nspname !~ '^pg_'
   AND NOT EXISTS (SELECT FROM pg_catalog.pg_depend d
                    WHERE d.classid = 'pg_catalog.pg_class'::pg_catalog.regclass
                      AND d.objid = c.oid AND d.deptype = 'e')

-- name: columns --
-- $1 relation oids
-- Column privileges are only ever explicit: attacl is NULL unless granted, and
-- aclexplode(NULL) is no rows.
SELECT a.attrelid AS relation, a.attnum, pg_catalog.quote_ident(a.attname) AS name,
       pg_catalog.format_type(a.atttypid, a.atttypmod) AS type, a.attnotnull,
       pg_catalog.pg_get_expr(d.adbin, d.adrelid) AS default,
       a.attidentity::text, a.attgenerated::text, a.attcompression::text,
       CASE WHEN a.attcollation <> t.typcollation THEN
           (SELECT pg_catalog.quote_ident(co.collname) FROM pg_catalog.pg_collation co
             WHERE co.oid = a.attcollation)
       END AS collation,
       ARRAY(SELECT ROW(CASE x.grantee WHEN 0 THEN 'PUBLIC'
                        ELSE pg_catalog.pg_get_userbyid(x.grantee) END,
                        x.privilege_type, x.is_grantable)
               FROM pg_catalog.aclexplode(a.attacl) x) AS grants
  FROM pg_catalog.pg_attribute a
  JOIN pg_catalog.pg_type t ON t.oid = a.atttypid
  LEFT JOIN pg_catalog.pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
 WHERE a.attrelid = ANY ($1::oid[]) AND a.attnum > 0 AND NOT a.attisdropped
 ORDER BY a.attrelid, a.attnum

-- name: constraints --
-- $1 relation oids
-- Postgres 18 records NOT NULL as constraints too (contype 'n'); nullability is
-- described with the columns, the same on every version.
SELECT c.conrelid AS relation, pg_catalog.quote_ident(c.conname) AS name,
       pg_catalog.pg_get_constraintdef(c.oid) AS definition
  FROM pg_catalog.pg_constraint c
 WHERE c.conrelid = ANY ($1::oid[]) AND c.contype <> 'n'

-- name: indexes --
-- $1 relation oids
SELECT i.indrelid AS relation, pg_catalog.pg_get_indexdef(i.indexrelid) AS definition
  FROM pg_catalog.pg_index i
 WHERE i.indrelid = ANY ($1::oid[])

-- name: triggers --
-- $1 relation oids
-- Internal triggers are the ones that enforce foreign keys, described as constraints.
-- pg_get_triggerdef leaves out whether a trigger was disabled; tgenabled says.
SELECT t.tgrelid AS relation, pg_catalog.pg_get_triggerdef(t.oid) AS definition,
       t.tgenabled::text AS enabled
  FROM pg_catalog.pg_trigger t
 WHERE t.tgrelid = ANY ($1::oid[]) AND NOT t.tgisinternal

-- name: policies --
-- $1 relation oids
SELECT p.polrelid AS relation, pg_catalog.quote_ident(p.polname) AS name, p.polcmd::text,
       p.polpermissive,
       ARRAY(SELECT CASE r WHEN 0 THEN 'PUBLIC' ELSE pg_catalog.pg_get_userbyid(r) END
               FROM pg_catalog.unnest(p.polroles) AS r ORDER BY 1) AS roles,
       pg_catalog.pg_get_expr(p.polqual, p.polrelid) AS using,
       pg_catalog.pg_get_expr(p.polwithcheck, p.polrelid) AS with_check
  FROM pg_catalog.pg_policy p
 WHERE p.polrelid = ANY ($1::oid[])

-- name: functions --
-- no arguments
-- A body written as a string (AS $$ ... $$) is prosrc, exactly as the migration wrote
-- it; a SQL-standard body (BEGIN ATOMIC) is only kept parsed, so it is deparsed.
SELECT p.oid::pg_catalog.regprocedure::text AS identity,
       pg_catalog.pg_get_function_arguments(p.oid) AS arguments,
       pg_catalog.pg_get_function_result(p.oid) AS result,
       p.prokind::text, l.lanname AS language, p.provolatile::text, p.proparallel::text,
       p.prosecdef,
       p.proisstrict, p.proleakproof, p.procost, p.prorows,
       pg_catalog.pg_get_userbyid(p.proowner) AS owner,
       coalesce(p.proconfig, '{}') AS config,
       CASE WHEN p.prosqlbody IS NOT NULL THEN pg_catalog.pg_get_function_sqlbody(p.oid)
            ELSE p.prosrc END AS body,
       ARRAY(SELECT ROW(CASE a.grantee WHEN 0 THEN 'PUBLIC'
                        ELSE pg_catalog.pg_get_userbyid(a.grantee) END,
                        a.privilege_type, a.is_grantable)
               FROM pg_catalog.aclexplode(coalesce(p.proacl,
                        pg_catalog.acldefault('f', p.proowner))) a) AS grants,
       ARRAY(SELECT a.privilege_type
               FROM pg_catalog.aclexplode(pg_catalog.acldefault('f', p.proowner)) a
              WHERE a.grantee = p.proowner) AS owner_default
  FROM pg_catalog.pg_proc p
  JOIN pg_catalog.pg_namespace n ON n.oid = p.pronamespace
  JOIN pg_catalog.pg_language l ON l.oid = p.prolang
 WHERE n.nspname <> 'information_schema' AND n.nspname !~ '^pg_'
   AND NOT EXISTS (SELECT FROM pg_catalog.pg_depend d
                    WHERE d.classid = 'pg_catalog.pg_proc'::pg_catalog.regclass
                      AND d.objid = p.oid AND d.deptype = 'e')

-- name: types --
-- no arguments
-- Enums and domains; the row types of tables and the array types are described with
-- what they belong to.
SELECT t.oid::pg_catalog.regtype::text AS name, t.typtype::text,
       pg_catalog.pg_get_userbyid(t.typowner) AS owner,
       CASE WHEN t.typtype = 'd' THEN pg_catalog.format_type(t.typbasetype, t.typtypmod) END
           AS base_type,
       t.typnotnull, t.typdefault,
       ARRAY(SELECT e.enumlabel::text FROM pg_catalog.pg_enum e
              WHERE e.enumtypid = t.oid ORDER BY e.enumsortorder) AS labels,
       ARRAY(SELECT pg_catalog.quote_ident(c.conname) || ' '
                    || pg_catalog.pg_get_constraintdef(c.oid)
               FROM pg_catalog.pg_constraint c
              WHERE c.contypid = t.oid AND c.contype <> 'n' ORDER BY 1) AS constraints
  FROM pg_catalog.pg_type t
  JOIN pg_catalog.pg_namespace n ON n.oid = t.typnamespace
 WHERE t.typtype IN ('e', 'd')
   AND n.nspname <> 'information_schema' AND n.nspname !~ '^pg_'
   AND NOT EXISTS (SELECT FROM pg_catalog.pg_depend d
                    WHERE d.classid = 'pg_catalog.pg_type'::pg_catalog.regclass
                      AND d.objid = t.oid AND d.deptype = 'e')

-- name: default_privileges --
-- no arguments
-- ALTER DEFAULT PRIVILEGES: what future objects will be granted, per creating role.
SELECT pg_catalog.pg_get_userbyid(d.defaclrole) AS role,
       coalesce(n.nspname, '') AS schema, d.defaclobjtype::text AS kind,
       ARRAY(SELECT ROW(CASE a.grantee WHEN 0 THEN 'PUBLIC'
                        ELSE pg_catalog.pg_get_userbyid(a.grantee) END,
                        a.privilege_type, a.is_grantable)
               FROM pg_catalog.aclexplode(d.defaclacl) a) AS grants
  FROM pg_catalog.pg_default_acl d
  LEFT JOIN pg_catalog.pg_namespace n ON n.oid = d.defaclnamespace
