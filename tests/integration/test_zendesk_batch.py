"""An import's tickets written a batch at a time (handlers/zendesk_batch.py) make the
history and the rows that the one-by-one path through the command handlers makes.

The same generated export (tests/support/zendesk.py, with its bad records) is imported
into tenant A one by one and into tenant B in batches. Every row of the tables an
imported ticket writes, every event (opened, with its metadata, seq and version) and
the report are compared ticket by ticket, with each id named by what it stands for
(the ids an import gives are derived from the tenant, upload ids are random).
"""

from __future__ import annotations

import re
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson
import pytest

from api.config import ProcessSettings
from api.root import ProcessRole, Services, running
from domain.clock import ManualClock
from domain.ids import TenantId
from handlers.tenants import create_tenant_as_operator
from handlers.zendesk_import import import_zendesk
from handlers.zendesk_records import ImportReport, target_id
from tests.support import pg
from tests.support.zendesk import ZendeskExport, write_export

NOW = datetime(2026, 6, 1, 9, tzinfo=UTC)
_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")

TABLES = {
    "tickets": "SELECT * FROM tickets",
    "ticket_versions": "SELECT * FROM ticket_versions",
    "messages": "SELECT * FROM messages",
    "ticket_contacts": "SELECT * FROM ticket_contacts",
    "search_documents": "SELECT kind, id, document::text, staff_document::text "
                        "FROM search_documents",
    "uploads": "SELECT * FROM uploads",
    # The data key that seals a blob is random: who it is sealed to is what counts.
    "file_blobs": "SELECT id, state, storage, chunk_size, sha256, size, subject_id, "
                  "created_by_kind, created_by_id, created_at FROM file_blobs",
    "import_sources": "SELECT source, kind, source_id, target_id, facts FROM import_sources",
    "jobs": "SELECT kind, dedupe_key, payload, status FROM jobs",
    # The people and groups go a kind a transaction (``zendesk_records.together``).
    "contacts": "SELECT * FROM contacts",
    "organizations": "SELECT * FROM organizations",
    # (updated_at: when the import deactivated them)
    "agents": "SELECT id, email, name, active, version, created_at, role FROM agents",
    "groups": "SELECT * FROM groups",
}


@dataclass
class Both:
    services: Services
    export: ZendeskExport
    one: TenantId
    batched: TenantId
    reports: tuple[ImportReport, ImportReport]
    admin_url: str


@pytest.fixture(scope="module")
async def both(databases: pg.Databases, tmp_path_factory: pytest.TempPathFactory
               ) -> AsyncIterator[Both]:
    clone = await databases.clone()
    # More tickets than a batch, so that batches follow one another.
    export = write_export(tmp_path_factory.mktemp("zendesk"), tickets=70)
    # A ticket an agent asked for: its requester is resolved (no imported contact holds
    # the address), so it goes one by one between two batches.
    doc = orjson.loads((export.directory / "tickets.json").read_bytes())
    for t in doc["tickets"]:
        if t["id"] == 20:
            t["requester_id"] = 203
    (export.directory / "tickets.json").write_bytes(orjson.dumps(doc))
    settings = ProcessSettings(database_url=clone.runtime_url, db_pool_min=1, db_pool_max=4)
    try:
        async with running(settings, ProcessRole.CLI, clock=ManualClock(NOW)) as services:
            a = (await create_tenant_as_operator(clone.admin_url, "One", at=NOW)).tenant_id
            b = (await create_tenant_as_operator(clone.admin_url, "Batched", at=NOW)).tenant_id
            one = await import_zendesk(services.store, services.files, a, export.directory,
                                       one_by_one=True)
            batched = await import_zendesk(services.store, services.files, b,
                                           export.directory)
            yield Both(services, export, a, b, (one, batched), clone.admin_url)
    finally:
        await databases.drop(clone.name)


async def _names(services: Services, export: ZendeskExport, tenant: TenantId
                 ) -> dict[str, str]:
    """Each id of the tenant's import named by what it stands for."""
    names = {str(tenant): "tenant"}
    async with services.store.unit_of_work(tenant, readonly=True) as uow:
        # One id can stand behind two rows (an agent, and the mark that it was
        # deactivated): in a fixed order, the first names it, on both tenants alike.
        for r in await uow.conn.fetch("SELECT kind, source_id, target_id FROM import_sources "
                                      "ORDER BY kind, source_id"):
            names.setdefault(str(r["target_id"]), f"{r['kind']}:{r['source_id']}")
        for r in await uow.conn.fetch("SELECT id, email FROM contacts"):
            # A contact a requester's resolution made has an id of its own.
            names.setdefault(str(r["id"]), f"email:{r['email']}")
        for r in await uow.conn.fetch("SELECT id, blob_id, name FROM uploads"):
            names[str(r["id"])] = f"upload:{r['name']}"
            names[str(r["blob_id"])] = f"blob:{r['name']}"
    for comments in export.comments.values():
        for c in comments:
            names[str(target_id(tenant, "comment", str(c["id"])))] = f"comment:{c['id']}"
    for zid in export.tickets:
        names[str(target_id(tenant, "ticket", str(zid)))] = f"ticket:{zid}"
    return names


def _named(value: Any, names: dict[str, str]) -> str:
    text = orjson.dumps(value, default=str, option=orjson.OPT_SORT_KEYS).decode()
    return _UUID.sub(lambda u: names.get(u.group(0), f"?{u.group(0)}"), text)


def _members_sorted(text: str) -> str:
    """``text`` with every ``members`` list in it sorted (by the names given)."""
    def walk(value: Any) -> Any:
        if isinstance(value, dict):
            return {k: sorted(v) if k == "members" and isinstance(v, list) else walk(v)
                    for k, v in value.items()}
        if isinstance(value, list):
            return [walk(v) for v in value]
        return value

    return orjson.dumps(walk(orjson.loads(text)), option=orjson.OPT_SORT_KEYS).decode()


async def _rows(services: Services, export: ZendeskExport, tenant: TenantId
                ) -> dict[str, list[str]]:
    names = await _names(services, export, tenant)
    out: dict[str, list[str]] = {}
    async with services.store.unit_of_work(tenant, readonly=True) as uow:
        for table, query in TABLES.items():
            rows = [{k: (v.hex() if isinstance(v, bytes) else v) for k, v in dict(r).items()
                     if k != "tenant_id"} for r in await uow.conn.fetch(query)]
            out[table] = sorted(_named(r, names) for r in rows)
        events = [e for e in await uow.read_tenant(0, 100_000) if e.actor_kind == "import"]
    # Every imported event but the ticket fields' (defined at the time of the import:
    # the export gives them no time of their own) and the agents' deactivation (at it).
    out["events"] = [_named([e.seq, e.stream_id, e.version, e.type, e.schema_version,
                             e.data, e.metadata, e.actor_kind, e.actor_id], names)
                     for e in events
                     if e.type not in ("TicketFieldDefined", "AgentUpdated")]
    # A group's members are kept in the order of their ids, which differ by tenant.
    out["groups"] = [_members_sorted(g) for g in out["groups"]]
    out["events"] = [_members_sorted(e) for e in out["events"]]
    return out


async def test_batches_write_what_the_command_handlers_write(both: Both) -> None:
    one = await _rows(both.services, both.export, both.one)
    batched = await _rows(both.services, both.export, both.batched)
    assert len(one["tickets"]) == 70 and len(one["events"]) > 70 * 5
    assert [r for r in one["messages"] if "?" in r] == []
    for table in [*TABLES, "events"]:
        assert len(one[table]) == len(batched[table]), table
        # Said whole on a failure: the rows only one side holds, not a truncated pair.
        only_one = sorted(set(one[table]) - set(batched[table]))
        only_batched = sorted(set(batched[table]) - set(one[table]))
        assert (only_one, only_batched) == ([], []), f"{table}: one by one {only_one} " \
                                                      f"batched {only_batched}"
        assert one[table] == batched[table], table


async def test_both_report_the_same_and_a_rerun_adds_nothing(both: Both) -> None:
    one, batched = both.reports
    assert batched.created == one.created and batched.existing == one.existing
    assert batched.skipped == one.skipped
    assert {(s.kind, s.source_id) for s in batched.skipped} == both.export.bad
    store = both.services.store
    async with store.unit_of_work(both.batched, readonly=True) as uow:
        head = (await uow.head())[0]
    again = await import_zendesk(store, both.services.files, both.batched,
                                 both.export.directory)
    assert sum(again.created.values()) == 0 and again.existing["ticket"] == 70
    async with store.unit_of_work(both.batched, readonly=True) as uow:
        assert (await uow.head())[0] == head


async def test_the_batched_chain_verifies(both: Both) -> None:
    for tenant in (both.one, both.batched):
        async with both.services.store.unit_of_work(tenant, readonly=True) as uow:
            chain = await uow.verify_chain()
        assert chain.ok, chain


async def test_a_batch_another_run_wrote_first_goes_one_by_one(
        both: Both, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A ticket another run imported after this run read what was imported fails the
    batch it is in, whose tickets then go one by one: none is written twice."""
    services, export = both.services, both.export
    tenant = (await create_tenant_as_operator(both.admin_url, "Raced", at=NOW)).tenant_id
    from handlers import zendesk_import

    async def still_running(run: Any) -> None:
        """The other run is not done: its agents are not deactivated yet."""

    # The other run: ticket 3 alone (with all the people), before this one...
    with monkeypatch.context() as other:
        other.setattr(zendesk_import, "deactivate_agents", still_running)
        await import_zendesk(services.store, services.files, tenant,
                             _only(export, tmp_path, "3"))

    original = zendesk_import.import_tickets

    async def unseen(run: Any, dry_run: bool, **kw: Any) -> None:
        # ...which this run did not see when it read what was imported.
        run.mapped.pop(("ticket", "3"))
        await original(run, dry_run, **kw)

    monkeypatch.setattr(zendesk_import, "import_tickets", unseen)
    report = await import_zendesk(services.store, services.files, tenant, export.directory)
    assert report.created["ticket"] == 69 and report.existing["ticket"] == 1
    assert {(s.kind, s.source_id) for s in report.skipped} == export.bad
    async with services.store.unit_of_work(tenant, readonly=True) as uow:
        opened = await uow.conn.fetchval(
            "SELECT count(*) FROM events WHERE type = 'TicketOpened'")
        assert opened == 70
        assert (await uow.verify_chain()).ok


def _only(export: ZendeskExport, tmp: Path, ticket: str) -> Path:
    """A copy of the export holding only ``ticket`` (with all the people)."""
    out = tmp / f"only-{uuid.uuid4().hex[:6]}"
    out.mkdir()
    for f in export.directory.iterdir():
        if f.is_file() and f.name != "tickets.json":
            (out / f.name).write_bytes(f.read_bytes())
    (out / "ticket_comments").mkdir()
    source = export.directory / "ticket_comments" / f"{ticket}.json"
    (out / "ticket_comments" / source.name).write_bytes(source.read_bytes())
    attachments = export.directory / "attachments"
    if attachments.is_dir():
        (out / "attachments").symlink_to(attachments)
    doc = orjson.loads((export.directory / "tickets.json").read_bytes())
    doc["tickets"] = [t for t in doc["tickets"] if str(t["id"]) == ticket]
    (out / "tickets.json").write_bytes(orjson.dumps(doc))
    return out
