"""What a Zendesk import (handlers/zendesk_import.py) makes of the export's people,
organizations, groups and ticket fields, and the state one run keeps.

**Who and when.** Every unit of work runs as the actor ``import:zendesk``
(eventstore/types.py ``importer``), the flag by which webhooks, mail, rules and the live
feed leave imported events alone, and stamps each event's metadata with
``{"import": {"source": "zendesk", "kind", "id", "author"}}``: the Zendesk record and
the Zendesk user who wrote it. Commands carry the source's times, so the events' ``at``
is when it happened there; ``recorded_at`` stays when the import wrote it.

**Once only.** Each record is created in one transaction together with its row in
``import_sources`` (migration 0695; the records of a kind share one transaction, each in
a savepoint of its own: ``together``), keyed by (tenant, source, kind, Zendesk id): a
ticket with all its comments, attachments, assignment and state is one transaction.
A rerun reads those rows and skips what committed; a record whose transaction did not
commit (a crash, a killed process) is done again from the start. The ids we give are
derived from the tenant and the Zendesk id, so even a lost race creates nothing twice.

**Order.** Organizations, users (agents are created active so that tickets can be
assigned to them, and deactivated at the end, each once: see ``deactivate_agents``),
groups with their members, ticket fields, tickets.

**SLA clocks are not recomputed**: the timers a ticket command schedules are cancelled
in the ticket's transaction, so no breach is ever appended for imported history, and
the source's own first-reply and resolution times are kept as recorded facts (the
ticket's ``import_sources.facts`` and its opening event's metadata).

Bad input is reported per record (``Skipped``) and never stops the run.
"""

from __future__ import annotations

import asyncio
import uuid
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from uuid import UUID

from domain.agent import AddAgent, UpdateAgent
from domain.attachment import FileLimits
from domain.contact import ContactFields
from domain.errors import DomainError
from domain.field_definitions import DefineField
from domain.fields import CHOICE_TYPES, FieldDefinition, FieldOption, FieldType
from domain.group import CreateGroup
from domain.ids import AgentId, GroupId, TenantId
from domain.values import (
    Actor,
    ActorKind,
    Priority,
    Role,
    TicketState,
)
from eventstore.errors import EventStoreError
from eventstore.sqlfile import load_queries
from eventstore.store import EventStore, UnitOfWork
from eventstore.types import importer
from handlers import attachments
from handlers.agents import add_agent, update_agent
from handlers.contacts import NewContact, create_contact
from handlers.errors import HandlerError
from handlers.groups import create_group
from handlers.organizations import NewOrganization, create_organization
from handlers.ticket_fields import define_field
from handlers.zendesk_export import Export, Skipped, parse_time

Q = load_queries(Path(__file__).with_name("imports.sql"))

SOURCE = "zendesk"
ACTOR = importer(SOURCE)
SYSTEM = Actor(kind=ActorKind.SYSTEM, id="import:zendesk")
"""Who moves, assigns and fills in an imported ticket: the import, on the source's behalf."""

STATES = {"new": TicketState.OPEN, "open": TicketState.OPEN,
          "pending": TicketState.PENDING, "hold": TicketState.ON_HOLD,
          "solved": TicketState.SOLVED, "closed": TicketState.CLOSED}
PRIORITIES = {"urgent": Priority.URGENT, "high": Priority.HIGH, "normal": Priority.NORMAL,
              "low": Priority.LOW}
FIELD_TYPES = {"text": FieldType.TEXT, "textarea": FieldType.TEXT,
               "integer": FieldType.NUMBER, "decimal": FieldType.NUMBER,
               "checkbox": FieldType.CHECKBOX, "date": FieldType.DATE,
               "tagger": FieldType.DROPDOWN, "multiselect": FieldType.MULTISELECT}
"""Zendesk's custom field types as ours; the others (subject, status, group, ...) are
the ticket's own attributes and map onto them."""
STAFF = {"agent": Role.AGENT, "admin": Role.ADMIN}

Checkpoint = Callable[[str, str], None]
"""Told (kind, Zendesk id) inside a record's transaction, just before it commits."""
Progress = Callable[[str, int, int], None]
"""Told (kind, records done, records of the kind) after each record."""


@dataclass(slots=True)
class ImportReport:
    """What a run did: records created (or, in a dry run, that would be) and found
    imported already, by kind, and everything skipped."""

    dry_run: bool = False
    created: Counter[str] = field(default_factory=Counter)
    existing: Counter[str] = field(default_factory=Counter)
    skipped: list[Skipped] = field(default_factory=list)

    def skip(self, kind: str, source_id: Any, reason: str) -> None:
        self.skipped.append(Skipped(kind, str(source_id), reason))

    def summary(self) -> dict[str, Any]:
        """Counts for the end of the run (and ``--json``)."""
        return {"dry_run": self.dry_run, "created": dict(sorted(self.created.items())),
                "existing": dict(sorted(self.existing.items())),
                "skipped": dict(sorted(Counter(s.kind for s in self.skipped).items()))}


class AlreadyImported(Exception):
    """Another run imported the record first: its transaction rolls back."""


def target_id(tenant_id: TenantId, kind: str, source_id: str) -> UUID:
    """Our id for a Zendesk record: the same for a tenant every run."""
    return uuid.uuid5(tenant_id, f"{SOURCE}:{kind}:{source_id}")


def stamp(kind: str, source_id: Any, author: Any = None, **more: Any) -> dict[str, Any]:
    found = {"source": SOURCE, "kind": kind, "id": str(source_id)}
    if author is not None:
        found["author"] = str(author)
    return {"import": found | more}


@dataclass(slots=True)
class Run:
    """One import run's state: the store, what is mapped so far and the report."""

    store: EventStore
    storages: attachments.Storages | None
    tenant_id: TenantId
    export: Export
    report: ImportReport
    checkpoint: Checkpoint | None
    progress: Progress | None
    mapped: dict[tuple[str, str], UUID] = field(default_factory=dict)
    emails: dict[str, str] = field(default_factory=dict)
    """Each user's e-mail, by Zendesk user id (a duplicate's is its first holder's)."""
    contacts: dict[str, UUID] = field(default_factory=dict)
    """The imported contact holding each e-mail."""
    file_limits: FileLimits | None = None
    """The tenant's file limits, once the first file read them."""
    shared: UnitOfWork | None = None
    """The transaction records are created in, each in a savepoint of it (``together``);
    None: each in a transaction of its own."""

    def known(self, kind: str, source_id: Any) -> UUID | None:
        return self.mapped.get((kind, str(source_id)))

    async def record(self, uow: UnitOfWork, kind: str, source_id: str, target: UUID,
                     facts: Mapping[str, Any] | None = None) -> None:
        """Write the record's ``import_sources`` row and tell the checkpoint hook."""
        # The facts as a JSON object (text given to a jsonb argument is stored as a
        # JSON string).
        row = await uow.conn.fetchrow(Q["record_import"], self.tenant_id, SOURCE, kind,
                                      source_id, target, dict(facts or {}))
        if row is None:
            raise AlreadyImported(kind, source_id)
        if self.checkpoint is not None:
            self.checkpoint(kind, source_id)

    def done(self, kind: str, source_id: str, target: UUID) -> None:
        self.mapped[(kind, source_id)] = target
        self.report.created[kind] += 1

    def tell(self, kind: str, n: int, total: int) -> None:
        if self.progress is not None:
            self.progress(kind, n, total)


async def _once(run: Run, kind: str, source_id: str, target: UUID, dry_run: bool,
                create: Callable[[UnitOfWork], Any], author: Any = None,
                facts: Mapping[str, Any] | None = None) -> bool:
    """Create one record in its own transaction with its ``import_sources`` row; a
    refusal is reported as the record skipped. True when it was created."""
    if run.known(kind, source_id) is not None:
        run.report.existing[kind] += 1
        return False
    if dry_run:
        run.mapped[(kind, source_id)] = target
        run.report.created[kind] += 1
        return True
    try:
        if run.shared is not None:
            uow, mark = run.shared, run.shared.mark()
            try:
                async with uow.conn.transaction():  # a savepoint: a refusal undoes it alone
                    await _create(run, uow, kind, source_id, target, create, author, facts)
            except BaseException:
                uow.undo_to(mark)
                raise
        else:
            async with run.store.unit_of_work(run.tenant_id, ACTOR) as uow:
                await _create(run, uow, kind, source_id, target, create, author, facts)
    except AlreadyImported:
        run.mapped[(kind, source_id)] = target
        run.report.existing[kind] += 1
        return False
    except (DomainError, HandlerError, EventStoreError) as exc:
        run.report.skip(kind, source_id, str(exc) or type(exc).__name__)
        return False
    run.done(kind, source_id, target)
    return True


async def _create(run: Run, uow: UnitOfWork, kind: str, source_id: str, target: UUID,
                  create: Callable[[UnitOfWork], Any], author: Any,
                  facts: Mapping[str, Any] | None) -> None:
    uow.stamp = stamp(kind, source_id, author)
    await create(uow)
    await run.record(uow, kind, source_id, target, facts)


Step = Callable[[Run, bool], Awaitable[None]]
"""One kind's import (``import_users``, ...): (run, dry_run)."""


async def together(run: Run, step: Step, dry_run: bool) -> None:
    """``step`` with its records created in one transaction, each in a savepoint of its
    own, so a refused record is left out alone and the rest commit together (a
    transaction a record cost more than the record: bench/import_zendesk.py). If the
    transaction fails as a whole (a conflict at commit), what it did is forgotten and
    the records go again, each in a transaction of its own."""
    if dry_run:
        await step(run, dry_run)
        return
    report = run.report
    saved = (dict(run.mapped), dict(run.emails), dict(run.contacts), Counter(report.created),
             Counter(report.existing), len(report.skipped))
    try:
        async with run.store.unit_of_work(run.tenant_id, ACTOR) as uow:
            run.shared = uow
            try:
                await step(run, dry_run)
            finally:
                run.shared = None
    except EventStoreError:
        run.mapped, run.emails, run.contacts = saved[0], saved[1], saved[2]
        report.created, report.existing = saved[3], saved[4]
        del report.skipped[saved[5]:]
        await step(run, dry_run)


def _created_at(record: Mapping[str, Any]) -> datetime:
    return parse_time(record.get("created_at")) or datetime.now(UTC)


async def import_organizations(run: Run, dry_run: bool) -> None:
    orgs = run.export.organizations
    for n, (zid, org) in enumerate(sorted(orgs.items(), key=lambda kv: int_key(kv[0])), 1):
        name = str(org.get("name") or "").strip()
        if not name:
            run.report.skip("organization", zid, "no name")
            continue
        at = parse_time(org.get("created_at"))
        if at is None:
            run.report.skip("organization", zid, f"invalid time {org.get('created_at')!r}")
            continue
        target = target_id(run.tenant_id, "organization", zid)
        domains = tuple(str(d).lower() for d in org.get("domain_names") or ())

        async def create(uow: UnitOfWork, name: str = name, domains: tuple[str, ...] = domains,
                         at: datetime = at, target: UUID = target) -> None:
            await create_organization(uow, NewOrganization(name=name, domains=domains, at=at,
                                                           organization_id=target))

        await _once(run, "organization", zid, target, dry_run, create)
        run.tell("organization", n, len(orgs))


def int_key(source_id: str) -> tuple[int, str]:
    """Zendesk ids in their numeric order (a non-number last)."""
    return (int(source_id), "") if source_id.isdigit() else (2**63, source_id)


async def import_users(run: Run, dry_run: bool) -> None:
    users = run.export.users
    holders: dict[str, str] = {}
    for n, (zid, user) in enumerate(sorted(users.items(), key=lambda kv: int_key(kv[0])), 1):
        run.tell("user", n, len(users))
        email = str(user.get("email") or "").strip().lower()
        if not email:
            run.report.skip("user", zid, "no e-mail")
            continue
        if email in holders:
            # The second holder of an address: its tickets go to the first one's record.
            run.emails[zid] = email
            run.report.skip("user", zid, f"duplicate e-mail {email} (user {holders[email]} "
                                         "holds it; this user's tickets go to that one)")
            continue
        at = parse_time(user.get("created_at"))
        if at is None:
            run.report.skip("user", zid, f"invalid time {user.get('created_at')!r}")
            continue
        holders[email] = zid
        name = str(user.get("name") or "").strip() or email
        role = STAFF.get(str(user.get("role")))
        if role is not None:
            target = target_id(run.tenant_id, "agent", zid)

            async def create_agent(uow: UnitOfWork, email: str = email, name: str = name,
                                   role: Role = role, at: datetime = at,
                                   target: UUID = target) -> None:
                await add_agent(uow, AddAgent(email=email, name=name, role=role, at=at,
                                              agent_id=AgentId(target)))

            if await _once(run, "agent", zid, target, dry_run, create_agent) \
                    or run.known("agent", zid):
                run.emails[zid] = email
            continue
        org_zid = user.get("organization_id")
        org = run.known("organization", org_zid) if org_zid is not None else None
        if org_zid is not None and org is None:
            run.report.skip("user.organization", zid,
                            f"unknown organization {org_zid}; the contact has none")
        target = target_id(run.tenant_id, "contact", zid)
        fields = ContactFields(email=email, name=name, external_id=f"zendesk:{zid}",
                               organization_id=org,  # type: ignore[arg-type]
                               phone=user.get("phone") or None)

        async def create_contact_(uow: UnitOfWork, fields: ContactFields = fields,
                                  at: datetime = at, target: UUID = target) -> None:
            await create_contact(uow, NewContact(fields=fields, at=at, contact_id=target))

        # Even when the contact is refused (a contact of the tenant holds the address),
        # the user's tickets go to whoever holds its e-mail (handlers/requesters.py).
        run.emails[zid] = email
        if await _once(run, "contact", zid, target, dry_run, create_contact_) \
                or run.known("contact", zid):
            run.contacts[email] = target


async def import_groups(run: Run, dry_run: bool) -> None:
    members: dict[str, list[AgentId]] = {}
    for m in run.export.memberships:
        agent = run.known("agent", m.get("user_id"))
        if agent is None:
            run.report.skip("group_membership", m.get("id", "?"),
                            f"unknown agent {m.get('user_id')} in group {m.get('group_id')}")
            continue
        members.setdefault(str(m.get("group_id")), []).append(AgentId(agent))
    groups = run.export.groups
    for n, (zid, group) in enumerate(sorted(groups.items(), key=lambda kv: int_key(kv[0])), 1):
        run.tell("group", n, len(groups))
        at = parse_time(group.get("created_at"))
        if at is None:
            run.report.skip("group", zid, f"invalid time {group.get('created_at')!r}")
            continue
        target = target_id(run.tenant_id, "group", zid)
        command = CreateGroup(group_id=GroupId(target), name=str(group.get("name") or zid),
                              members=tuple(dict.fromkeys(members.get(zid, ()))), at=at)

        async def create(uow: UnitOfWork, command: CreateGroup = command) -> None:
            await create_group(uow, command)

        await _once(run, "group", zid, target, dry_run, create)


def field_key(source_id: str) -> str:
    """Our key for a Zendesk custom field."""
    return f"zd_{source_id}"


def definition_of(zid: str, raw: Mapping[str, Any], report: ImportReport | None = None
                  ) -> FieldDefinition | None:
    """Our definition of a Zendesk custom field (None: one of the ticket's own
    attributes); options whose value we cannot keep are reported and left out."""
    type_ = FIELD_TYPES.get(str(raw.get("type")))
    if type_ is None:
        return None
    options: list[FieldOption] = []
    if type_ in CHOICE_TYPES:
        for option in raw.get("custom_field_options") or ():
            value = str(option.get("value") or "")
            try:
                options.append(FieldOption(value=value, title=str(option.get("name") or value)))
            except ValueError as exc:
                if report is not None:
                    report.skip("ticket_field.option", zid, f"option {value!r}: {exc}")
    at = _created_at(raw)
    return FieldDefinition(key=field_key(zid), version=0,
                           title=str(raw.get("title") or zid)[:100], type=type_,
                           options=tuple(options), active=bool(raw.get("active", True)),
                           created_at=at, updated_at=at)


async def import_fields(run: Run, dry_run: bool) -> None:
    for zid, raw in sorted(run.export.ticket_fields.items(), key=lambda kv: int_key(kv[0])):
        d = definition_of(zid, raw, run.report)
        if d is None:
            run.report.skip("ticket_field", zid, f"Zendesk's own {raw.get('type')} field: "
                                                 "it maps onto the ticket itself")
            continue
        at = _created_at(raw)
        target = target_id(run.tenant_id, "ticket_field", zid)
        command = DefineField(key=d.key, title=d.title, type=d.type, options=d.options,
                              active=d.active, at=at)

        async def create(uow: UnitOfWork, command: DefineField = command) -> None:
            await define_field(uow, command)

        await _once(run, "ticket_field", zid, target, dry_run, create)


async def deactivate_agents(run: Run) -> None:
    """Each imported agent deactivated once (marked in ``import_sources``): created active
    so that tickets could be assigned to them, they wait deactivated, without a password,
    for an admin to invite them. An agent an admin activated since stays active."""
    for (kind, zid), agent in sorted(run.mapped.items()):
        if kind != "agent" or run.known("agent_deactivated", zid) is not None:
            continue
        try:
            async with run.store.unit_of_work(run.tenant_id, ACTOR) as uow:
                uow.stamp = stamp("agent", zid)
                row = await uow.conn.fetchrow(Q["record_import"], run.tenant_id, SOURCE,
                                              "agent_deactivated", zid, agent, {})
                if row is None:
                    continue
                await update_agent(uow, UpdateAgent(agent_id=AgentId(agent), active=False,
                                                    at=datetime.now(UTC)))
        except (DomainError, HandlerError) as exc:
            run.report.skip("agent", zid, f"not deactivated: {exc}")


async def _one(data: bytes) -> AsyncIterator[bytes]:
    yield data


async def upload_file(run: Run, path: Path, name: str, at: datetime) -> UUID:
    """The file at ``path`` received and recorded as an upload of the importer."""
    assert run.storages is not None
    command = attachments.ReceiveFile(name=name, declared_type=None, uploader=ACTOR, at=at)
    data = await asyncio.to_thread(path.read_bytes)
    if run.file_limits is None:
        # The tenant's limits, read once a run (``receive`` checks each file's name,
        # type and size against them).
        run.file_limits = await attachments.check_upload(run.store, run.tenant_id, command,
                                                         None)
    found = run.file_limits
    received = await attachments.receive(run.store, run.storages, run.tenant_id, command,
                                         _one(data), found)
    async with run.store.unit_of_work(run.tenant_id, ACTOR) as uow:
        uow.deferring = True  # the upload's rows go in the COMMIT's message
        done = await attachments.record_upload(uow, received, command)
    return UUID(str(done["id"]))


__all__ = ["ACTOR", "PRIORITIES", "SOURCE", "STATES", "SYSTEM", "AlreadyImported", "ImportReport",
           "Run", "deactivate_agents", "definition_of", "field_key",
           "import_fields", "import_groups", "import_organizations", "import_users",
           "int_key", "stamp", "target_id", "together", "upload_file"]

