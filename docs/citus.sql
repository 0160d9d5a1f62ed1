-- Distributing the helpdesk schema by tenant on Citus.
--
-- What this file is: the distribution calls for the schema `helpdesk migrate` builds,
-- in dependency order (a table is distributed after every table its foreign keys
-- reference), and the changes that must come with them. It has not been run: there
-- is no Citus server in the workplace this was written in. What is checked here
-- (tests/integration/test_citus_ready.py) is that the schema obeys the rules these
-- calls need (tenant_id first in every key, every foreign key between tenant tables
-- carrying tenant_id) and that this file names every table of the schema, in an order
-- its foreign keys allow. docs/scaling.md says why each table goes where it does.
--
-- Run on the coordinator, as the owner, after `helpdesk migrate` and before any
-- tenant exists (or accept that existing rows are copied to the shards).
--
-- Extensions: the search and tag indexes (migrations 0520, 0521) use btree_gin's operator classes,
-- so btree_gin must exist on every worker too. Citus propagates CREATE EXTENSION run
-- on the coordinator to the workers: migrate with the citus extension already created
-- there, or run `CREATE EXTENSION btree_gin` on each worker before distributing.

-- 1. Reference tables: tiny, read by every node, written by migrations only.
SELECT create_reference_table('schema_migrations');
SELECT create_reference_table('instance_secrets');

-- 2. The job queue keeps its tenant jobs with the tenant (SLA timers are scheduled in
--    the command's own transaction, and the webhook trigger on events inserts
--    deliveries beside them), so `jobs` is distributed. Global jobs (tenant_id NULL:
--    jobs.purge, jobs.seed_tenants) cannot be: a distribution column is never NULL,
--    and a primary key must contain it. They move to a table of their own that stays
--    on the coordinator.
CREATE TABLE jobs_global (LIKE jobs INCLUDING ALL);
ALTER TABLE jobs_global DROP COLUMN tenant_id;
INSERT INTO jobs_global (kind, dedupe_key, payload, run_at, status, attempts, max_attempts,
                         locked_until, locked_by, last_error, created_at, updated_at)
SELECT kind, dedupe_key, payload, run_at, status, attempts, max_attempts, locked_until,
       locked_by, last_error, created_at, updated_at
  FROM jobs WHERE tenant_id IS NULL;
DELETE FROM jobs WHERE tenant_id IS NULL;
ALTER TABLE jobs ALTER COLUMN tenant_id SET NOT NULL,
    DROP CONSTRAINT jobs_pkey,
    ADD CONSTRAINT jobs_pkey PRIMARY KEY (tenant_id, id);
SELECT citus_add_local_table_to_metadata('jobs_global');
--    What changes for the job claim (scheduler/queries.sql `claim`, `renew`,
--    `complete`, `fail`, `release`, `next_due`, `purge_finished`): these are the
--    statements that read jobs across tenants, by design. On the distributed table
--    the claim's `FOR UPDATE SKIP LOCKED ... ORDER BY run_at LIMIT n` is no longer one
--    index walk: run one claim loop per worker node against that node's shards (each
--    shard is an ordinary table there, with its own jobs_due index), or let Citus fan
--    the claim out (each shard returns its first n, the coordinator keeps the earliest
--    n). `complete`/`fail`/`renew`/`release` by job id become multi-shard updates
--    unless they also name the tenant, which every claimed job carries (Job.tenant_id):
--    pass (tenant_id, id) pairs. Global jobs are claimed from jobs_global by the same
--    statements pointed at it, on the coordinator.

--    Failed sign-ins are counted before the tenant is known (migration 0552): they
--    stay on the coordinator, where sign-in requests are answered.
SELECT citus_add_local_table_to_metadata('sign_in_failures');

-- 3. Tenant tables, co-located: all of a tenant's rows on one node. tenant_heads first
--    (tenants.id references it), then tenants (by its own id), then the rest.
--    A tenant's slug is unique across tenants (migration 0551), which a unique index
--    on a distributed table cannot hold without the distribution column: the slugs
--    move to a reference table first, and tenant_by_slug and the operator's
--    slug_taken / set_tenant_slug (handlers/queries.sql) read and write it instead.
CREATE TABLE tenant_slugs (slug text PRIMARY KEY, tenant_id uuid NOT NULL UNIQUE);
INSERT INTO tenant_slugs SELECT slug, id FROM tenants;
DROP INDEX tenants_slug;
SELECT create_reference_table('tenant_slugs');
SELECT create_distributed_table('tenant_heads', 'tenant_id');
SELECT create_distributed_table('tenants', 'id', colocate_with => 'tenant_heads');
SELECT create_distributed_table('events', 'tenant_id', colocate_with => 'tenants');
SELECT create_distributed_table('agents', 'tenant_id', colocate_with => 'tenants');
SELECT create_distributed_table('api_keys', 'tenant_id', colocate_with => 'tenants');
SELECT create_distributed_table('agent_logins', 'tenant_id', colocate_with => 'tenants');
SELECT create_distributed_table('agent_sessions', 'tenant_id', colocate_with => 'tenants');
SELECT create_distributed_table('agent_invitations', 'tenant_id', colocate_with => 'tenants');
SELECT create_distributed_table('tenant_settings', 'tenant_id', colocate_with => 'tenants');
SELECT create_distributed_table('webhooks', 'tenant_id', colocate_with => 'tenants');
SELECT create_distributed_table('groups', 'tenant_id', colocate_with => 'tenants');
SELECT create_distributed_table('data_keys', 'tenant_id', colocate_with => 'tenants');
SELECT create_distributed_table('organizations', 'tenant_id', colocate_with => 'tenants');
SELECT create_distributed_table('organization_domains', 'tenant_id',
                                colocate_with => 'tenants');
SELECT create_distributed_table('contacts', 'tenant_id', colocate_with => 'tenants');
SELECT create_distributed_table('contact_logins', 'tenant_id', colocate_with => 'tenants');
SELECT create_distributed_table('contact_password_links', 'tenant_id', colocate_with => 'tenants');
SELECT create_distributed_table('contact_sessions', 'tenant_id', colocate_with => 'tenants');
-- After both kinds of session its tokens belong to (agent_sessions, contact_sessions).
SELECT create_distributed_table('refresh_tokens', 'tenant_id', colocate_with => 'tenants');
SELECT create_distributed_table('tickets', 'tenant_id', colocate_with => 'tenants');
SELECT create_distributed_table('messages', 'tenant_id', colocate_with => 'tenants');
-- Who reads a ticket in the portal (migration 0900), after the tickets it refers to.
SELECT create_distributed_table('ticket_contacts', 'tenant_id', colocate_with => 'tenants');
SELECT create_distributed_table('search_documents', 'tenant_id', colocate_with => 'tenants');
SELECT create_distributed_table('widget_sessions', 'tenant_id', colocate_with => 'tenants');
SELECT create_distributed_table('widget_tickets', 'tenant_id', colocate_with => 'tenants');
-- Files: blobs before the chunks and uploads that reference them.
SELECT create_distributed_table('file_blobs', 'tenant_id', colocate_with => 'tenants');
SELECT create_distributed_table('file_chunks', 'tenant_id', colocate_with => 'tenants');
SELECT create_distributed_table('uploads', 'tenant_id', colocate_with => 'tenants');
SELECT create_distributed_table('idempotency_keys', 'tenant_id', colocate_with => 'tenants');
SELECT create_distributed_table('jobs', 'tenant_id', colocate_with => 'tenants');
SELECT create_distributed_table('projection_checkpoints', 'tenant_id',
                                colocate_with => 'tenants');
SELECT create_distributed_table('analytics_tickets', 'tenant_id', colocate_with => 'tenants');
SELECT create_distributed_table('analytics_daily', 'tenant_id', colocate_with => 'tenants');
SELECT create_distributed_table('analytics_agent_daily', 'tenant_id',
                                colocate_with => 'tenants');
SELECT create_distributed_table('ticket_fields', 'tenant_id', colocate_with => 'tenants');
-- Rules, macros and saved views (migrations 0570-0573).
SELECT create_distributed_table('rules', 'tenant_id', colocate_with => 'tenants');
SELECT create_distributed_table('rule_firings', 'tenant_id', colocate_with => 'tenants');
SELECT create_distributed_table('rule_ticket_times', 'tenant_id', colocate_with => 'tenants');
SELECT create_distributed_table('rule_time_firings', 'tenant_id', colocate_with => 'tenants');
SELECT create_distributed_table('macros', 'tenant_id', colocate_with => 'tenants');
SELECT create_distributed_table('saved_views', 'tenant_id', colocate_with => 'tenants');
SELECT create_distributed_table('analytics_field_daily', 'tenant_id',
                                colocate_with => 'tenants');
SELECT create_distributed_table('analytics_summary_cells', 'tenant_id',
                                colocate_with => 'tenants');
-- Every version of every ticket, for the desk as of a seq (migration 0611).
SELECT create_distributed_table('ticket_versions', 'tenant_id', colocate_with => 'tenants');
-- Mail (migration 0580): mailboxes before what references them.
SELECT create_distributed_table('mailboxes', 'tenant_id', colocate_with => 'tenants');
SELECT create_distributed_table('mail_messages', 'tenant_id', colocate_with => 'tenants');
SELECT create_distributed_table('mail_threads', 'tenant_id', colocate_with => 'tenants');
SELECT create_distributed_table('mail_quarantine', 'tenant_id', colocate_with => 'tenants');
SELECT create_distributed_table('mail_bounces', 'tenant_id', colocate_with => 'tenants');
-- Notification mail (migration 0670).
SELECT create_distributed_table('mail_notifications', 'tenant_id', colocate_with => 'tenants');
-- Slack (migration 0760): the connection, the events taken in, threads and posts.
SELECT create_distributed_table('slack_integrations', 'tenant_id', colocate_with => 'tenants');
SELECT create_distributed_table('slack_events', 'tenant_id', colocate_with => 'tenants');
SELECT create_distributed_table('slack_threads', 'tenant_id', colocate_with => 'tenants');
SELECT create_distributed_table('slack_posts', 'tenant_id', colocate_with => 'tenants');
-- Satisfaction links (migration 0720), after the contacts they name.
SELECT create_distributed_table('satisfaction_links', 'tenant_id', colocate_with => 'tenants');
-- SLA calendars and policies (migration 0590): calendars before the policies naming them.
SELECT create_distributed_table('sla_calendars', 'tenant_id', colocate_with => 'tenants');
SELECT create_distributed_table('sla_calendar_versions', 'tenant_id',
                                colocate_with => 'tenants');
SELECT create_distributed_table('sla_policies', 'tenant_id', colocate_with => 'tenants');
-- The revision of a tenant's SLA policies (migration 0680); its sequence stays on the
-- coordinator, which evaluates nextval for the insert.
SELECT create_distributed_table('sla_policy_revisions', 'tenant_id',
                                colocate_with => 'tenants');
-- OpenID Connect sign-in (migration 0690).
SELECT create_distributed_table('oidc_providers', 'tenant_id', colocate_with => 'tenants');
SELECT create_distributed_table('oidc_attempts', 'tenant_id', colocate_with => 'tenants');

-- What importers made of their sources' records (migration 0695).
SELECT create_distributed_table('import_sources', 'tenant_id', colocate_with => 'tenants');

-- 4. What changes for the API-key lookup (api_key_lookup, by key hash, before the
--    tenant is known). On the distributed api_keys it is a query on every shard (one
--    index probe each, api_keys_key_hash), behind each process's key cache
--    (KEY_CACHE_SECONDS). To route it to one node, new keys carry their tenant:
--    `hd_<tenant id, base32>_<secret>`; the API reads the tenant from the key and the
--    lookup takes it as a second argument, so Citus routes by it:
--
--      CREATE OR REPLACE FUNCTION api_key_lookup(p_key_hash bytea, p_tenant uuid)
--      RETURNS TABLE (tenant_id uuid, key_id uuid, role text, agent_id uuid,
--                     agent_active boolean)
--      LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, public AS $$
--          SELECT k.tenant_id, k.id, k.role, k.agent_id, a.active
--            FROM api_keys k
--            LEFT JOIN agents a ON a.tenant_id = k.tenant_id AND a.id = k.agent_id
--           WHERE k.tenant_id = p_tenant AND k.key_hash = p_key_hash
--             AND k.revoked_at IS NULL
--      $$;
--
--    Keys issued before keep working through the one-argument lookup (the fan-out)
--    until they are rotated. Making api_keys a reference table instead is not an
--    option here: it references tenants (distributed), and a reference table cannot.

-- 5. Not changed by distribution, but to check on a Citus test cluster before use:
--    - Arming: tenant and actor are armed per transaction with set_config(..., true)
--      on the coordinator, and the row-level security policies are evaluated where
--      the shards are. The setting must reach the worker nodes: Citus propagates
--      `SET LOCAL` (citus.propagate_set_commands = 'local'), so the arm statement
--      (eventstore/pool.py arm_statement) would be sent as SET LOCAL.
--    - Triggers on distributed tables (events_before_insert updating tenant_heads,
--      events_schedule_webhooks inserting into jobs, events_check_import reading
--      tenant_heads and the statement's new rows, key_holders_changed) touch only
--      the same tenant's co-located shards; Citus runs them on the shards with
--      citus.enable_unsafe_triggers = on.
--    - Cross-tenant statements besides the job claim: the projector's search for
--      tenants behind their head (projections/queries.sql `claim`,
--      `ensure_checkpoints`, `status`, `lag_totals`) and the tenant listings. They
--      fan out and stay correct; test_citus_ready.py keeps their list.
