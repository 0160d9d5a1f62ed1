"""The JSON the API answers with, kept ready in the read models.

A ticket's document is rendered once, when a command changes the ticket (in the
command's own transaction, next to the folded state), and stored as it will be sent;
lists and gets then pass the stored bytes through untouched, with no decoding,
validation or re-encoding per request. Messages, agents and API keys are flat rows,
rendered straight from the row with orjson.

The shapes are the API's response models (``api.schemas``); tests/e2e/test_response_shapes.py
checks that every answer made from these documents validates against them and equals
their own serialisation byte for byte. Times are UTC with a ``Z``, as pydantic writes them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
from uuid import UUID

import orjson

from domain.group import Group
from domain.sla import SlaClock
from domain.ticket import Ticket
from domain.values import SlaMetric

_OPTIONS = orjson.OPT_UTC_Z


def _default(value: Any) -> str:
    # asyncpg decodes uuid columns to its own UUID subclass, which orjson only
    # serialises natively as the exact uuid.UUID type.
    if isinstance(value, UUID):
        return str(value)
    raise TypeError(f"{type(value).__name__} is not JSON serializable")


def dumps(value: Any) -> bytes:
    """JSON bytes as the API writes them (UTC times end in ``Z``)."""
    return orjson.dumps(value, default=_default, option=_OPTIONS)


def _clock(clock: SlaClock) -> dict[str, Any]:
    shown: dict[str, Any] = {
        "target_ms": clock.target_ms,
        "started_at": clock.started_at,
        "due_at": clock.due_at,
        "paused": clock.paused,
        "remaining_ms": clock.remaining_ms,
        "fulfilled_at": clock.fulfilled_at,
        "breached_at": clock.breached_at,
        "warned_at": clock.warned_at,
    }
    if clock.basis is not None:
        # Only for clocks on an SLA policy: documents of the others read as before.
        policy = clock.basis.model_dump(mode="json")
        if policy["policy_name"] is None:
            # A clock recorded before policies' names were: its document reads as it did.
            del policy["policy_name"]
        shown["policy"] = policy
    return shown


def ticket_document(t: Ticket) -> dict[str, Any]:
    """A ticket as the API shows it (``TicketOut``), as plain JSON-ready values."""
    return {
        "id": t.id, "version": t.version, "state": t.state, "subject": t.subject,
        "requester": {"contact_id": t.requester.contact_id, "email": t.requester.email,
                      "name": t.requester.name},
        "priority": t.priority, "source": t.source, "tags": list(t.tags),
        "assignee": t.assignee, "group_id": t.group_id, "follow_up_of": t.follow_up_of,
        "follow_up_ids": list(t.follow_up_ids), "created_at": t.created_at,
        "updated_at": t.updated_at, "solved_at": t.solved_at, "closed_at": t.closed_at,
        "reopen_count": t.reopen_count, "awaiting_reply": t.awaiting_reply,
        # Periodic update and requester wait: on tickets opened on SLA policies only.
        "sla": {m.value: _clock(t.clocks[m]) for m in SlaMetric if m in t.clocks},
        "fields": {k: list(v) if isinstance(v, tuple) else v
                   for k, v in sorted(t.fields.items())},
        "attachments": [f.model_dump() for f in t.files],
        **_teamwork(t),
    }


def _teamwork(t: Ticket) -> dict[str, Any]:
    """Merges, links, followers, CCs and the satisfaction rating, each only when the
    ticket has any: a ticket without them reads as it did before they existed
    (docs/teamwork.md)."""
    out: dict[str, Any] = {}
    if t.merged_into is not None:
        out["merged_into"] = t.merged_into
    if t.merged_from:
        out["merged_from"] = list(t.merged_from)
    if t.split_from is not None:
        out["split_from"] = t.split_from
    if t.split_into:
        out["split_into"] = list(t.split_into)
    if not t.links.empty():
        out["links"] = {"related": list(t.links.related),
                        "duplicate_of": t.links.duplicate_of,
                        "duplicates": list(t.links.duplicates),
                        "problem": t.links.problem, "incidents": list(t.links.incidents)}
    if t.followers:
        out["followers"] = list(t.followers)
    if t.ccs:
        out["ccs"] = [{"contact_id": c.contact_id, "email": c.email, "name": c.name}
                      for c in t.ccs]
    if t.satisfaction is not None:
        out["satisfaction"] = t.satisfaction.model_dump()
    return out


TICKET_KEYS = ("id", "version", "state", "subject", "requester", "priority", "source", "tags",
               "assignee", "group_id", "follow_up_of", "follow_up_ids", "created_at", "updated_at",
               "solved_at", "closed_at", "reopen_count", "awaiting_reply", "sla", "fields",
               "attachments")
"""The top-level keys of a ticket's document (a stored one lacking any is re-rendered
by ``helpdesk migrate``)."""


def ticket_json(t: Ticket) -> bytes:
    """The bytes of a ticket's document, as stored in ``tickets.view`` and sent."""
    return dumps(ticket_document(t))


def group_document(g: Group) -> dict[str, Any]:
    """A group as the API shows it (``GroupOut``)."""
    return {"id": g.id, "name": g.name, "members": list(g.members), "version": g.version,
            "created_at": g.created_at, "updated_at": g.updated_at}


def message_document(row: Mapping[str, Any]) -> dict[str, Any]:
    """A message (``MessageOut``) from its read-model row."""
    return {
        "id": row["id"], "ticket_id": row["ticket_id"], "visibility": row["visibility"],
        "author": {"kind": row["author_kind"], "id": row["author_id"]},
        "body": row["body"], "created_at": row["created_at"],
        "attachments": row.get("attachments") or [],
    }


__all__ = ["TICKET_KEYS", "dumps", "group_document", "message_document", "ticket_document",
           "ticket_json"]
