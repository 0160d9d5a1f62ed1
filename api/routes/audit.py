"""Auditor endpoints: the history and past states of tickets, contacts and
organizations, groups, rules, calendars, SLA policies, macros and saved views; the
tenant feed, chain verification.

Auditor and admin keys only; every endpoint here reads. Events are shown as stored
(``schema_version`` and payload as hashed), with the actor the database stamped and
the chain hash in hex.

History, as-of and verification tolerate lag: they read through ``services.reads``
(the replica while it is fit, else the primary) and say where in ``Read-From`` and
``Read-Lag-Seconds`` (api/http/lagging.py). The event feed reads the primary.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Annotated, Any, Literal
from uuid import UUID

from fastapi import APIRouter, Path, Query, Response
from pydantic import BaseModel, Field

from api.http import commands
from api.http.answer_headers import ETAG, READ_FROM, READ_LAG, sends
from api.http.auth import Principal
from api.http.deps import Authorized, Paging, ServicesDep
from api.http.history import history_page
from api.http.lagging import source_headers
from api.http.pagination import (
    DEFAULT_LIMIT,
    PageAsked,
    PageCursor,
    PageLimit,
    paginate_int,
    scope_of,
)
from api.http.params import ANY_OF, EventTypeName, IsoAwareDateTime
from api.http.problem_docs import errors
from api.http.problems import Problem, invalid_parameter
from api.http.routing import StrictRoute
from api.schemas.events import EventPage, render_event
from api.schemas.groups import GroupOut
from api.schemas.macros import MacroOut, macro_document
from api.schemas.people import (
    ContactOut,
    OrganizationOut,
    contact_document,
    organization_document,
)
from api.schemas.rules import RuleOut, rule_document
from api.schemas.saved_views import ViewOut, view_document
from api.schemas.sla_policies import CalendarOut, PolicyOut, calendar_document, policy_document
from api.schemas.tickets import TicketOut, etag
from domain.contact import fold_contact
from domain.errors import DomainError
from domain.events import ContactCreated, Event, GroupCreated, OrganizationCreated
from domain.group import fold_group
from domain.macro import fold_macro
from domain.mapper import from_stored
from domain.organization import fold_organization
from domain.rule import fold_rule
from domain.saved_view import fold_view
from domain.sla_calendar import fold_calendar
from domain.target_policy import fold_policy
from domain.ticket import fold
from domain.ticket.events import TicketOpened, TicketSplitFrom
from domain.workflow_events import (
    CalendarCreated,
    MacroCreated,
    RuleCreated,
    SlaPolicyCreated,
    ViewCreated,
)
from eventstore.store import EventStore, UnitOfWork
from eventstore.types import ChainReport, RecordedEvent
from projections.views import dumps, group_document, ticket_json

if TYPE_CHECKING:
    from api.root import Services

MAX_VERIFY_SEQS = 100_000
"""The most seqs one ``/v1/audit/verify`` request recomputes (bounded work)."""
INT32 = 2**31 - 1  # versions are integer columns
INT64 = 2**63 - 1  # seqs are bigint columns
MAX_TYPES = 50

router = APIRouter(tags=["audit"], route_class=StrictRoute)


class VerifyOut(BaseModel):
    ok: bool
    checked: int
    head_seq: int = Field(description="the tenant's head where the chain was read")
    first_bad_seq: int | None
    from_seq: int
    to_seq: int
    read_from: Literal["primary", "replica"] = Field(
        description="where the chain was read: the streaming replica while it is fit, "
                    "else the primary")
    lag_seconds: float = Field(
        description="how far the replica was behind the primary then; 0 on the primary")


def _shown(document: Callable[[Any], Any]) -> Callable[[Any], bytes]:
    """A record as JSON bytes of the document ``GET`` gives of it."""
    return lambda record: dumps(document(record))


@dataclass(frozen=True, slots=True)
class _Kind:
    """A kind of stream the audit endpoints show: its name, the types of event such a
    stream may start with, and how its events replay to the document the API shows
    (with its version)."""

    name: str
    plural: str
    first_types: frozenset[str]
    fold: Callable[[Iterable[Event]], Any]
    """The stream's events to the record (None for none)."""
    render: Callable[[Any], bytes]
    """The record as the JSON bytes ``GET`` gives."""
    model: type[BaseModel]
    """What the as-of answer is (the document ``GET`` gives)."""

    def replay(self, events: Iterable[Event]) -> tuple[bytes, int]:
        """The document the events replay to, with the record's version."""
        record = self.fold(events)
        assert record is not None
        return self.render(record), record.version


KINDS = (
    # A ticket opens, or is split off another (its first event names the source).
    _Kind("ticket", "tickets", frozenset({TicketOpened.TYPE, TicketSplitFrom.TYPE}), fold,
          ticket_json, TicketOut),
    _Kind("group", "groups", frozenset({GroupCreated.TYPE}), fold_group,
          _shown(group_document), GroupOut),
    _Kind("contact", "contacts", frozenset({ContactCreated.TYPE}), fold_contact,
          _shown(contact_document), ContactOut),
    _Kind("organization", "organizations", frozenset({OrganizationCreated.TYPE}),
          fold_organization, _shown(organization_document), OrganizationOut),
    _Kind("rule", "rules", frozenset({RuleCreated.TYPE}), fold_rule, _shown(rule_document),
          RuleOut),
    _Kind("calendar", "calendars", frozenset({CalendarCreated.TYPE}), fold_calendar,
          _shown(calendar_document), CalendarOut),
    _Kind("policy", "sla-policies", frozenset({SlaPolicyCreated.TYPE}), fold_policy,
          _shown(policy_document), PolicyOut),
    # Personal macros and views too: the audit trail is the tenant's, whoever owns them.
    # A deleted one replays to what it was when deleted, one version on.
    _Kind("macro", "macros", frozenset({MacroCreated.TYPE}), fold_macro,
          _shown(macro_document), MacroOut),
    _Kind("view", "views", frozenset({ViewCreated.TYPE}), fold_view, _shown(view_document),
          ViewOut),
)


async def _require(session: UnitOfWork, kind: _Kind, stream_id: UUID) -> None:
    if await session.stream_first_type(stream_id) not in kind.first_types:
        raise Problem(404, "not_found", f"no such {kind.name}")


async def _history(kind: _Kind, stream_id: UUID, principal: Principal, services: Services,
                   response: Response, paging: PageAsked) -> Any:
    async def read_page(s: UnitOfWork, after: int, n: int) -> list[RecordedEvent]:
        await _require(s, kind, stream_id)
        return await s.read_stream_page(stream_id, after, n)

    return await history_page(services, principal, response, "history",
                              {f"{kind.name}_id": str(stream_id)}, paging, read_page)


async def _as_of(kind: _Kind, stream_id: UUID, principal: Principal, services: Services,
                 version: int | None, at: datetime | None) -> Response:
    if (version is None) == (at is None):
        raise invalid_parameter("give exactly one of version and at", "version", "at")

    async def read(store: EventStore) -> list[RecordedEvent]:
        async with store.unit_of_work(principal.tenant_id, principal.actor, readonly=True) as s:
            await _require(s, kind, stream_id)
            if version is not None:
                return await s.read_stream(stream_id, to_version=version)
            assert at is not None
            return await s.read_stream_until(stream_id, at)

    events, source = await services.reads.run(read)
    if not events:
        raise Problem(404, "not_found", f"the {kind.name} did not exist yet at that instant")
    if version is not None and events[-1].version < version:
        raise Problem(404, "not_found", f"the {kind.name} has {events[-1].version} versions; "
                                        f"no version {version}")
    try:
        document, current = kind.replay(from_stored(e.type, e.schema_version, e.data)
                                        for e in events)
    except DomainError as exc:
        # Stored events that no longer fold are corruption, not a client error.
        raise Problem(500, "corrupt_stream",
                      f"the {kind.name}'s events cannot be replayed: {exc}") from exc
    return Response(document, media_type="application/json",
                    headers={"ETag": etag(current), **source_headers(source)})


def _stream_routes(kind: _Kind) -> None:
    """``GET /v1/{plural}/{{name}_id}/history`` and ``/as-of`` for one kind of stream."""
    # The path parameter is named for the kind (``ticket_id``, ...); given as a default,
    # since the annotations are strings resolved in this module's namespace.
    stream = Path(alias=f"{kind.name}_id")
    article = "An" if kind.name[0] in "aeiou" else "A"

    async def history(principal: Authorized, services: ServicesDep, response: Response,
                      paging: Paging, stream_id: UUID = stream) -> Any:
        return await _history(kind, stream_id, principal, services, response, paging)

    async def as_of(principal: Authorized, services: ServicesDep, stream_id: UUID = stream,
                    version: Annotated[int | None, Query(ge=1, le=INT32)] = None,
                    at: Annotated[IsoAwareDateTime | None, Query()] = None) -> Response:
        return await _as_of(kind, stream_id, principal, services, version, at)

    base = f"/v1/{kind.plural}/{{{kind.name}_id}}"
    read = errors(404) | sends(200, required=(READ_FROM, READ_LAG))
    state = errors(404) | sends(200, required=(ETAG, READ_FROM, READ_LAG))
    router.add_api_route(
        f"{base}/history", history, methods=["GET"], name=f"{kind.name}_history",
        response_model=EventPage, responses=read,
        summary=f"{article} {kind.name}'s events in order, with actor, seq, version and hash")
    router.add_api_route(
        f"{base}/as-of", as_of, methods=["GET"], name=f"{kind.name}_as_of",
        response_model=kind.model, responses=state,
        summary=f"The {kind.name} as the API showed it at a version or an instant")


for _kind in KINDS:
    _stream_routes(_kind)


@router.get("/v1/events", response_model=EventPage, responses=errors(),
            summary="The tenant's event feed by seq (no total)")
async def event_feed(
    principal: Authorized,
    services: ServicesDep,
    limit: PageLimit = DEFAULT_LIMIT,
    cursor: PageCursor = None,
    after_seq: Annotated[int, Query(ge=0, le=INT64)] = 0,
    type: Annotated[list[EventTypeName] | None,
                    Query(max_length=MAX_TYPES, description=ANY_OF)] = None,
    stream_id: UUID | None = None,
    actor_id: Annotated[str | None, Query(max_length=200)] = None,
    after: Annotated[IsoAwareDateTime | None, Query(description="recorded at or after")] = None,
    before: Annotated[IsoAwareDateTime | None, Query(description="recorded before")] = None,
) -> Any:
    types = sorted(set(type)) if type else None
    codec = services.cursors
    scope = scope_of(principal.tenant_id, "events", {
        "after_seq": after_seq, "type": types, "stream_id": str(stream_id),
        "actor_id": actor_id, "after": after.isoformat() if after else None,
        "before": before.isoformat() if before else None})
    position = after_seq if cursor is None else codec.decode_int(scope, cursor)
    async with commands.reading(services, principal) as s:
        rows = await s.read_feed(position, limit + 1, types=types, stream_id=stream_id,
                                 actor_id=actor_id, recorded_from=after,
                                 recorded_before=before)
    events, nxt = paginate_int(codec, scope, rows, limit, lambda e: e.seq)
    return {"data": [render_event(e) for e in events], "next_cursor": nxt}


@router.get("/v1/audit/verify", response_model=VerifyOut,
            summary=f"Recompute the hash chain over at most {MAX_VERIFY_SEQS} seqs",
            responses=errors() | sends(200, required=(READ_FROM, READ_LAG)))
async def verify(
    principal: Authorized,
    services: ServicesDep,
    response: Response,
    from_seq: Annotated[int, Query(ge=1, le=INT64)] = 1,
    to_seq: Annotated[int | None, Query(ge=1, le=INT64)] = None,
) -> Any:
    end = to_seq if to_seq is not None else from_seq + MAX_VERIFY_SEQS - 1
    if end < from_seq:
        raise Problem(400, "invalid_range", "to_seq must not be below from_seq")
    if end - from_seq + 1 > MAX_VERIFY_SEQS:
        raise Problem(400, "range_too_large",
                      f"one request verifies at most {MAX_VERIFY_SEQS} seqs; split the range",
                      max_seqs=MAX_VERIFY_SEQS)

    async def read(store: EventStore) -> ChainReport:
        async with store.unit_of_work(principal.tenant_id, principal.actor, readonly=True) as s:
            return await s.verify_chain(from_seq, end)

    report, source = await services.reads.run(read)
    response.headers.update(source_headers(source))
    return {"ok": report.ok, "checked": report.checked, "head_seq": report.head_seq,
            "first_bad_seq": report.first_bad_seq, "from_seq": from_seq,
            "to_seq": min(end, report.head_seq), "read_from": source.name,
            "lag_seconds": source.lag_seconds}
