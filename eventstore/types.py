"""The event store's own vocabulary: events as (type, schema_version, data)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any
from uuid import UUID

from domain.ids import TenantId

JsonObject = dict[str, Any]

Write = Callable[..., Awaitable[Any]]
"""Runs a statement whose rows nobody reads, as ``conn.execute`` does, answering its
command status: a connection's ``execute``, or a unit of work's ``UnitOfWork.write``,
which may defer it to the COMMIT's message (and then answers None)."""


@dataclass(frozen=True, slots=True)
class StoreActor:
    """Who is acting, as the database stamps it onto every event.

    ``kind`` is one of ``api_key``, ``agent`` (a signed-in person), ``system`` or
    ``operator``; ``id`` names the key, the agent, the subsystem or the operator.
    """

    kind: str
    id: str


SYSTEM = StoreActor("system", "scheduler")

IMPORT_ACTOR_KIND = "import"
"""The actor kind of events an importer appends (``import:<source>``, docs/import.md):
history brought from another helpdesk. It is the flag every reactor reads: no webhook,
mail, rule or live-feed notice comes of such an event."""


def importer(source: str) -> StoreActor:
    """The actor of an import from ``source`` (``import:zendesk``)."""
    return StoreActor(IMPORT_ACTOR_KIND, source)


@dataclass(frozen=True, slots=True)
class NewEvent:
    """An event about to be appended.

    ``seal`` names the fields of ``data`` that hold personal data, which a store with
    a keyring seals with the data key of ``subject`` (eventstore/sealing.py); the
    writer says which they are (the domain declares them: domain/personal.py). With
    no subject they stay as they are (no contact to hold a key: docs/erasure.md)."""

    type: str
    data: JsonObject
    schema_version: int = 1
    metadata: JsonObject = field(default_factory=dict)
    seal: tuple[tuple[str, ...], ...] = ()
    subject: UUID | None = None


@dataclass(frozen=True, slots=True)
class RecordedEvent:
    """An event as stored, with everything the database assigned to it."""

    tenant_id: TenantId
    seq: int
    stream_id: UUID
    version: int
    type: str
    schema_version: int
    data: JsonObject
    metadata: JsonObject
    actor_kind: str
    actor_id: str
    recorded_at: datetime
    hash: bytes


@dataclass(frozen=True, slots=True)
class ChainReport:
    """The result of recomputing the hash chain over a range of seqs."""

    ok: bool
    checked: int
    head_seq: int
    first_bad_seq: int | None
