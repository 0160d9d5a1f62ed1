"""Tenant isolation of every tenant table the catalog knows, as the runtime role.

The tables are not listed here: every public table with a ``tenant_id`` column (and
``tenants``, keyed by ``id``) is found in ``pg_catalog``, so a table is covered the
day a migration creates it. Application queries all filter by ``tenant_id`` as well,
so HTTP tests cannot tell a missing policy from a present one; this test asks the
database alone, with two tenants' rows in every table and the other tenant armed
exactly as the service arms a unit of work (eventstore ``arm``):

* its rows are not seen (``count(*)`` is 0), and nothing but the armed tenant's is;
* an UPDATE and a DELETE aimed at them change nothing (``UPDATE 0``, ``DELETE 0``), or,
  where the runtime role holds no such privilege, are refused for want of it;
* an INSERT of one of the armed tenant's own rows under the other tenant's id is
  refused by row-level security (or for want of the privilege);

and the catalog itself: row-level security enabled and forced on each, its tenant
policy exactly the one expression, and no other permissive policy but the documented
cross-tenant exceptions below, each checked for exactly its text.

The rows come from the product: the demo seed's small tenant played twice through the
command handlers, a sign-in, an invitation, a portal sign-in, a widget ticket, a
webhook, a mailbox with mail taken in (a ticket, a bounce, a quarantined mail) and an
invitation mailed by it, an SLA calendar and policy, an OpenID Connect provider, and a
projector run. A table still empty for a tenant gets one minimal row written by the
owner role from the catalog (tests.support.catalog); a table that cannot be filled fails
by name, so the coverage cannot shrink silently.
"""

from __future__ import annotations

import dataclasses
import uuid
from datetime import UTC, datetime, timedelta

import asyncpg
import pytest

from domain.business_hours import Calendar
from domain.ids import TenantId, TicketId
from domain.macro import CreateMacro
from domain.sla_calendar import CreateCalendar
from domain.target_policy import CreatePolicy
from domain.tenant_settings import DEFAULT_SETTINGS
from domain.values import Role
from domain.workflow_events import PolicyTargets
from eventstore.store import EventStore
from handlers import (
    invitations,
    mail_in,
    mailboxes,
    oidc,
    organizations,
    portal,
    sessions,
    sla_policies,
    slack,
    slack_in,
    webhooks,
    widget,
)
from handlers.credentials import Passwords
from handlers.demo import harbor
from handlers.demo.seed import DemoTenant, seed_demo
from handlers.macros import create_macro
from handlers.tenant_settings import ReplaceSettings, replace_settings
from projections.projector import Projector
from tests.support import catalog, files, pg
from tests.support.desk import ACTOR, agent
from tests.support.mail import corpus
from tests.support.pg import RUNTIME_USER
from tests.support.rules import engine as rule_engine
from tests.support.rules import make_rule
from tests.support.slack import message_event

NOW = datetime.now(UTC).replace(microsecond=0)
PASSWORDS = Passwords(memory_kib=1024, time_cost=1)
ORIGIN = "https://shop.example.com"
LIFETIMES = sessions.Lifetimes(refresh=timedelta(days=30), session=timedelta(days=90))

TENANT_POLICY = ("({column} = (NULLIF(current_setting('app.tenant_id'::text, true), "
                 "''::text))::uuid)")
WORKER = "(current_setting('app.worker'::text, true) = 'on'::text)"

NOT_TENANT_TABLES = {
    "schema_migrations": "the migration runner's ledger, one for the whole database",
    "instance_secrets": "the instance's own keys (cursor, token and data-key secrets), "
                        "shared by every tenant of the database",
    "sign_in_failures": "failed sign-ins are counted before the tenant is known (an unknown "
                        "slug too), by hashes of the account and the address only",
}
"""Public tables without a tenant, and why; any other such table fails."""

EXCEPTIONS: dict[tuple[str, str], tuple[str, str, str | None, str | None, str]] = {
    # (table, policy): (command, roles, USING, WITH CHECK, why)
    ("jobs", "worker_all"): (
        "ALL", "{public}", WORKER, WORKER,
        "the scheduler claims due jobs of every tenant with FOR UPDATE SKIP LOCKED"),
    ("projection_checkpoints", "worker_all"): (
        "ALL", "{public}", WORKER, WORKER,
        "projectors claim the (projection, tenant) behind its head, of any tenant"),
    ("tenant_heads", "worker_read"): (
        "SELECT", "{public}", WORKER, None,
        "projectors and the feed compare checkpoints with every tenant's head (read only)"),
    ("tenants", "worker_read"): (
        "SELECT", "{public}", WORKER, None,
        "the scheduler seeds each tenant's periodic jobs (read only)"),
    ("agents", "owner_lookup"): (
        "SELECT", "{helpdesk_owner}", "true", None,
        "the operator's commands find agents of any tenant; the owner role only"),
    ("tenants", "owner_lookup"): (
        "SELECT", "{helpdesk_owner}", "true", None,
        "sign-in finds a tenant by its slug before it is known, and the operator checks a "
        "slug is free; the owner role only"),
    ("api_keys", "owner_lookup"): (
        "SELECT", "{helpdesk_owner}", "true", None,
        "the operator's commands find keys of any tenant; the owner role only"),
    ("data_keys", "owner_census"): (
        "SELECT", "{helpdesk_owner}", "true", None,
        "key rotation re-wraps every tenant's data keys; the owner role only"),
    ("search_documents", "owner_search"): (
        "SELECT", "{helpdesk_owner}", "true", None,
        "reindexing after a migration reads every tenant's documents; the owner role only"),
    ("mailboxes", "owner_lookup"): (
        "SELECT", "{helpdesk_owner}", "true", None,
        "the inbound route finds a mailbox's tenant before it is known (mailbox_lookup), "
        "and readiness counts every tenant's (mail_health); the owner role only"),
    ("slack_integrations", "owner_lookup"): (
        "SELECT", "{helpdesk_owner}", "true", None,
        "the Events API route finds a Slack connection's tenant before it is known "
        "(slack_lookup), and readiness counts every tenant's (slack_health); the owner "
        "role only"),
}
"""The permissive policies other than a table's tenant policy. Restrictive policies
(the customer, widget and group scopes) can only narrow what the tenant policy lets through
and need no entry."""

INSERT_REFUSALS = {
    "events": "event insert outside its tenant context",
}
"""Tables whose insert trigger refuses a foreign tenant before row-level security is
consulted (its policy's WITH CHECK is held to the text above instead)."""


async def _seed(db: pg.TestDatabase, store: EventStore, pool: asyncpg.Pool
                ) -> tuple[TenantId, TenantId]:
    """Two tenants with rows in as many tables as the product writes, through its own
    handlers."""
    seeded: list[DemoTenant] = await seed_demo(db.admin_url, store, NOW,
                                               (harbor.PLAN, harbor.PLAN), passwords=PASSWORDS)
    for demo in seeded:
        tenant = demo.tenant_id
        person = demo.key("admin")
        assert person.email is not None and person.password is not None
        await sessions.sign_in(store, PASSWORDS, LIFETIMES,
                               sessions.SignIn(tenant, person.email, person.password, NOW))
        async with store.unit_of_work(tenant, ACTOR) as s:
            await replace_settings(s, ReplaceSettings(settings=dataclasses.replace(
                DEFAULT_SETTINGS, widget_origins=(ORIGIN,)), at=NOW))
            await invitations.invite(s, invitations.InviteAgent(
                email="new@harbor-bikes.example", name="New", role=Role.AGENT, at=NOW,
                valid_for=timedelta(hours=1)))
            await webhooks.configure_webhook(s, webhooks.ConfigureWebhook(
                url="https://hooks.example.com/desk", event_types=("*",), enabled=True,
                at=NOW, secret="a webhook secret of the desk"))
            await organizations.create_organization(s, organizations.NewOrganization(
                name="Mailbox Riders", domains=("riders.example",), at=NOW))
            contact = await s.conn.fetchval("SELECT id FROM contacts WHERE email = $1",
                                            harbor.CUSTOMERS["ole"].email)
            link = await portal.issue_link(s, contact, NOW, timedelta(hours=1))
        await portal.set_password(store, PASSWORDS, link["token"], "a good password", NOW)
        await sessions.sign_in(store, PASSWORDS, LIFETIMES, sessions.SignIn(
            tenant, harbor.CUSTOMERS["ole"].email, "a good password", NOW), portal.PORTAL)
        async with store.unit_of_work(tenant, ACTOR) as s:
            await create_macro(s, CreateMacro(macro_id=uuid.uuid4(), name="Thanks",
                                              text="Thanks!", at=NOW))
        await make_rule(store, tenant, NOW, [{"field": "event", "op": "is",
                                              "value": "TicketOpened"}],
                        [{"type": "add_tags", "value": ["seen"]}])
        opened = await widget.open_session(store, tenant, "visitor@example.com", ORIGIN, NOW,
                                           timedelta(hours=1))
        async with store.unit_of_work(tenant, widget.widget_actor(opened.session_id)) as s:
            await widget.open_ticket(s, opened.session_id, TicketId(uuid.uuid4()), "Hello",
                                     "From the shop's page", NOW)
        # A file on a message (uploads, its blob and chunks), and one never attached.
        async with store.unit_of_work(tenant, ACTOR, readonly=True) as s:
            ticket = await s.conn.fetchval("SELECT id FROM tickets WHERE state <> 'closed' "
                                           "ORDER BY id LIMIT 1")
        await files.post_file(store, tenant, ACTOR, agent(uuid.uuid4()), ticket,
                              b"a screenshot", NOW)
        await files.upload(store, tenant, ACTOR, b"not attached", "later.txt", NOW)
        # An SLA calendar (and its first version) and the tenant's default policy on it.
        async with store.unit_of_work(tenant, ACTOR) as s:
            office = await sla_policies.create_calendar(s, CreateCalendar(
                calendar_id=uuid.uuid4(), name="Office", at=NOW, hours=Calendar(
                    timezone="UTC", weekly={d: [("09:00", "17:00")] for d in range(5)})))
            await sla_policies.create_policy(s, CreatePolicy(
                policy_id=uuid.uuid4(), name="Default", default=True, calendar_id=office.id,
                targets=PolicyTargets(first_reply_ms=4 * 3_600_000), at=NOW))
        # A mailbox, and mail taken in by it as its inbound route does: a ticket (its
        # mail row and thread), a hard bounce, and a mail kept in the quarantine; with
        # its SMTP, an invitation is mailed (a notification row).
        async with store.unit_of_work(tenant, ACTOR) as s:
            box, _secret = await mailboxes.create_mailbox(s, mailboxes.CreateMailbox(
                address="support@acme.test", name="Support", at=NOW,
                smtp=mailboxes.Smtp(host="127.0.0.1", port=25, security="none")))
            await invitations.invite(s, invitations.InviteAgent(
                email="mailed@harbor-bikes.example", name="Mailed", role=Role.AGENT, at=NOW,
                valid_for=timedelta(hours=1)))
        for raw, outcome in ((corpus("gmail.eml"), "ticket"),
                             (corpus("dsn_bounce.eml"), "bounce"),
                             (b"this is not a mail at all\n", "quarantined")):
            taken = await mail_in.take_in(store, files.storages(store), tenant, box["id"],
                                          raw, NOW)
            assert taken.outcome == outcome, taken
        # An OpenID Connect provider (its secret sealed); its sign-ins under way get
        # the catalog's minimal row, as starting one asks the provider for its metadata.
        async with store.unit_of_work(tenant, ACTOR) as s:
            await oidc.set_provider(s, oidc.SetProvider(
                label="Example ID", issuer="https://id.acme.test", client_id="helpdesk",
                client_secret="sealed-secret", allowed_domain=None, create_agents=False,
                at=NOW))
        # A Slack connection (its secrets sealed), a message taken in from it (its event
        # row and thread) and a post to that thread, as the slack.post job makes one.
        async with store.unit_of_work(tenant, ACTOR) as s:
            await slack.connect_slack(s, slack.ConnectSlack(
                channel_id="C0HELPDESK", bot_user_id=None, bot_token="xoxb-1-2-token",
                signing_secret="a" * 32, notices=None, at=NOW))
        taken = await slack_in.take_event(store, tenant, message_event(
            "Ev1", "1700000000.000001", "Help"), NOW)
        assert taken.outcome == "ticket", taken
        async with store.unit_of_work(tenant, ACTOR) as s:
            await s.conn.execute(
                "INSERT INTO slack_posts (tenant_id, id, dedupe_key, kind, ticket_id, "
                "channel_id, thread_ts, status, created_at) VALUES ($1, $2, 'k', 'reply', "
                "$3, 'C0HELPDESK', '1700000000.000001', 'queued', $4)",
                tenant, uuid.uuid4(), taken.ticket_id, NOW)
    for projector in (Projector(pool), rule_engine(pool, store)):
        await projector.ensure_checkpoints()
        await projector.drain()
    return seeded[0].tenant_id, seeded[1].tenant_id


async def _fill(db: pg.TestDatabase, tables: dict[str, str], tenants: tuple[TenantId, ...]
                ) -> dict[str, str]:
    """One minimal row, written by the owner role under the tenant's context (row-level
    security is forced on the owner too), in each table still empty for a tenant;
    returns the tables that could not be filled, with the reason."""
    failed: dict[str, str] = {}
    conn = await asyncpg.connect(db.admin_url)
    try:
        for table, column in tables.items():
            for tenant in tenants:
                async with conn.transaction():
                    await conn.execute("SET LOCAL ROLE helpdesk_owner")
                    await conn.execute("SELECT set_config('app.tenant_id', $1::text, true)",
                                       str(tenant))
                    if await conn.fetchval(f"SELECT count(*) FROM {table} "
                                           f"WHERE {column} = $1", tenant):
                        continue
                    try:
                        async with conn.transaction():
                            await catalog.fill_row(conn, table, column, tenant)
                    except (asyncpg.PostgresError, LookupError) as exc:
                        failed[table] = f"{type(exc).__name__}: {exc}"
    finally:
        await conn.close()
    return failed


async def _arm(conn: asyncpg.Connection, tenant: TenantId) -> None:
    # As eventstore/queries.sql `arm` does for a unit of work: transaction-local.
    await conn.execute("SELECT set_config('app.tenant_id', $1::text, true), "
                       "set_config('app.actor_kind', 'api_key', true), "
                       "set_config('app.actor_id', 'isolation-test', true)", str(tenant))


async def _may(conn: asyncpg.Connection, table: str, privilege: str) -> bool:
    allowed: bool = await conn.fetchval("SELECT has_table_privilege(current_user, $1, $2)",
                                        f"public.{table}", privilege)
    return allowed


async def _attempt(conn: asyncpg.Connection, sql: str, *args: object) -> str:
    """Run ``sql`` in a savepoint that is always rolled back (a breach must not change
    what the next check sees): its status, or the error it raised."""
    savepoint = conn.transaction()
    await savepoint.start()
    try:
        status: str = await conn.execute(sql, *args)
        return status
    except asyncpg.PostgresError as exc:
        return str(exc) if isinstance(exc, asyncpg.InsufficientPrivilegeError) \
            else f"{type(exc).__name__}: {exc}"
    finally:
        await savepoint.rollback()


async def _breaches(conn: asyncpg.Connection, table: str, column: str, own: TenantId,
                    other: TenantId) -> list[str]:
    """What the armed tenant ``own`` can do to ``other``'s rows of ``table``."""
    found: list[str] = []
    seen_other = await conn.fetchval(f"SELECT count(*) FROM {table} WHERE {column} = $1",
                                     other)
    if seen_other:
        found.append(f"sees {seen_other} row(s) of the other tenant")
    strangers = await conn.fetchval(
        f"SELECT count(*) FROM {table} WHERE {column} IS DISTINCT FROM $1", own)
    if strangers:
        found.append(f"sees {strangers} row(s) not its own")
    if not await conn.fetchval(f"SELECT count(*) FROM {table} WHERE {column} = $1", own):
        found.append("does not see its own rows (nothing was proven)")
    for verb, sql in (("UPDATE", f"UPDATE {table} SET {column} = {column} "
                                 f"WHERE {column} = $1"),
                      ("DELETE", f"DELETE FROM {table} WHERE {column} = $1")):
        status = await _attempt(conn, sql, other)
        if await _may(conn, table, verb):
            # Row-level security hides the rows, so not even a refusing trigger fires.
            if status != f"{verb} 0":
                found.append(f"{verb} of the other tenant's rows: {status}")
        elif not status.startswith(f"permission denied for table {table}"):
            found.append(f"{verb} without the privilege: {status}")
    names = await catalog.writable_columns(conn, table)
    copied = ", ".join("$1::uuid" if n == column else catalog.ident(n) for n in names)
    insert = (f"INSERT INTO {table} ({', '.join(map(catalog.ident, names))}) "
              f"SELECT {copied} FROM {table} WHERE {column} = $2 LIMIT 1")
    refusal = await _attempt(conn, insert, other, own)
    if not await _may(conn, table, "INSERT"):
        expected = "permission denied"
    else:
        expected = INSERT_REFUSALS.get(
            table, f'new row violates row-level security policy for table "{table}"')
    if not refusal.startswith(expected):
        found.append(f"INSERT under the other tenant's id: {refusal}")
    return found


async def test_every_tenant_table_hides_and_refuses_the_other_tenant(db, store, pool) -> None:
    a, b = await _seed(db, store, pool)
    conn = await asyncpg.connect(db.runtime_url)
    try:
        assert await conn.fetchval("SELECT current_user") == RUNTIME_USER
        assert await conn.fetchval("SELECT rolsuper OR rolbypassrls FROM pg_roles "
                                   "WHERE rolname = current_user") is False
        tables = await catalog.tenant_tables(conn)
        unfilled = await _fill(db, tables, (a, b))
        assert unfilled == {}, f"tables without rows of both tenants: {unfilled}"

        breaches: dict[str, list[str]] = {}
        # No tenant armed: nothing at all (fail closed).
        async with conn.transaction():
            for table in tables:
                if await conn.fetchval(f"SELECT count(*) FROM {table}"):
                    breaches.setdefault(table, []).append("rows visible with no tenant armed")
        # The worker setting alone (as the scheduler and projectors arm it): both
        # tenants' rows of the documented worker tables, nothing of any other table.
        worker_tables = {t for (t, _), (*_, using, _check, _why) in EXCEPTIONS.items()
                         if using == WORKER}
        async with conn.transaction():
            await conn.execute("SELECT set_config('app.worker', 'on', true)")
            for table, column in tables.items():
                seen = {r[0] for r in await conn.fetch(f"SELECT DISTINCT {column} "
                                                       f"FROM {table}")}
                if table in worker_tables and not {a, b} <= seen:
                    breaches.setdefault(table, []).append(
                        "the worker does not see both tenants (the exception is gone?)")
                elif table not in worker_tables and seen:
                    breaches.setdefault(table, []).append(
                        "rows visible to the worker setting without a tenant")
        for own, other in ((b, a), (a, b)):
            async with conn.transaction():
                await _arm(conn, own)
                for table, column in tables.items():
                    for breach in await _breaches(conn, table, column, own, other):
                        breaches.setdefault(table, []).append(breach)
        assert breaches == {}, "tenant isolation broken: " + "; ".join(
            f"{t}: {', '.join(found)}" for t, found in breaches.items())
    finally:
        await conn.close()


async def test_every_tenant_table_forces_its_tenant_policy_and_only_documented_exceptions(
        db) -> None:
    conn = await asyncpg.connect(db.runtime_url)
    try:
        tables = await catalog.tenant_tables(conn)
        others = sorted(set(await catalog.public_tables(conn)) - set(tables))
        assert others == sorted(NOT_TENANT_TABLES), (
            "public tables without a tenant_id column must be tenant tables or be "
            f"documented here: {others}")
        flags = {r["relname"]: (r["relrowsecurity"], r["relforcerowsecurity"])
                 for r in await conn.fetch(
                     "SELECT relname, relrowsecurity, relforcerowsecurity FROM pg_class "
                     "WHERE relnamespace = 'public'::regnamespace")}
        policies = await conn.fetch(
            "SELECT tablename, policyname, permissive, roles::text AS roles, cmd, qual, "
            "with_check FROM pg_policies WHERE schemaname = 'public'")
        # The owner's exceptions reach the owner role alone.
        assert await conn.fetchval(
            "SELECT pg_has_role(current_user, 'helpdesk_owner', 'MEMBER')") is False

        wrong: list[str] = []
        seen_exceptions: set[tuple[str, str]] = set()
        for table, column in tables.items():
            enabled, forced = flags[table]
            if not enabled:
                wrong.append(f"{table}: row level security is not enabled")
            if not forced:
                wrong.append(f"{table}: row level security is not forced")
            expected = TENANT_POLICY.format(column=column)
            tenant_policies = 0
            for p in (p for p in policies if p["tablename"] == table):
                shape = (p["cmd"], p["roles"], p["qual"], p["with_check"])
                if p["permissive"] == "RESTRICTIVE":
                    continue
                if shape == ("ALL", "{public}", expected, expected):
                    tenant_policies += 1
                    continue
                documented = EXCEPTIONS.get((table, p["policyname"]))
                if documented is None:
                    wrong.append(f"{table}: permissive policy {p['policyname']} {shape} is "
                                 "neither its tenant policy nor a documented exception")
                elif documented[:4] != shape:
                    wrong.append(f"{table}: policy {p['policyname']} is {shape}, documented "
                                 f"as {documented[:4]}")
                else:
                    seen_exceptions.add((table, p["policyname"]))
            if tenant_policies != 1:
                wrong.append(f"{table}: {tenant_policies} tenant policies, one expected "
                             f"(USING and WITH CHECK {expected})")
        missing = set(EXCEPTIONS) - seen_exceptions
        if missing:
            wrong.append(f"documented exceptions that no longer exist: {sorted(missing)}")
        assert wrong == [], "\n".join(wrong)
    finally:
        await conn.close()


@pytest.mark.parametrize("table", sorted(NOT_TENANT_TABLES))
async def test_tables_without_a_tenant_are_read_only_for_the_runtime_role(db, table) -> None:
    conn = await asyncpg.connect(db.runtime_url)
    try:
        for privilege in ("INSERT", "UPDATE", "DELETE", "TRUNCATE"):
            assert await _may(conn, table, privilege) is False, (table, privilege)
    finally:
        await conn.close()
