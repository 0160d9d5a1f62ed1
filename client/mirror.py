"""A mirror of a desk, kept by folding pages of ``GET /v1/changes``.

``Mirror.apply_page`` takes one page as the API answers it; applying every page from
``after_seq=0`` rebuilds each ticket as ``GET /v1/tickets/{id}`` returns it and each
ticket's messages as ``GET /v1/tickets/{id}/messages`` lists them (compared as JSON
values). The client keeps ``after_seq``, the one number it needs to resume::

    mirror = Mirror()
    while True:
        page = http.get("/v1/changes", params={"after_seq": mirror.after_seq}).json()
        mirror.apply_page(page)
        if mirror.after_seq >= page["head_seq"]:
            break  # caught up; poll again later, or follow the live feed

Each change is dispatched on its ``stream_type`` to that kind's folder (``FOLDERS``);
kinds this client does not mirror (``tenant``: keys, agents, settings) are skipped,
and a new kind of stream is one more entry. The fold needs nothing but the events:
they carry the decided facts (SLA clocks included), never anything to recompute.

Standalone: imports nothing of the service.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

Json = dict[str, Any]
SLA_METRICS = ("first_response", "next_reply", "resolution")


class MirrorError(Exception):
    """A change that does not continue what the mirror holds (a repeated or missing
    seq, a version out of order): the mirror is not a faithful copy any more."""


def _time(value: str | None) -> str | None:
    # Events write instants with microseconds always; documents as JSON encoders do,
    # without a fraction when it is zero.
    if value is not None and value.endswith(".000000Z"):
        return value[:-8] + "Z"
    return value


def _clock(clock: Mapping[str, Any]) -> Json:
    return {"target_ms": clock["target_ms"], "started_at": _time(clock.get("started_at")),
            "due_at": _time(clock.get("due_at")), "paused": clock.get("paused", False),
            "remaining_ms": clock.get("remaining_ms"),
            "fulfilled_at": _time(clock.get("fulfilled_at")),
            "breached_at": _time(clock.get("breached_at"))}


def _message(ticket_id: str, data: Mapping[str, Any], visibility: str) -> Json:
    author = data["author"]
    return {"id": data["message_id"], "ticket_id": ticket_id, "visibility": visibility,
            "author": {"kind": author["kind"], "id": author["id"]}, "body": data["body"],
            "created_at": _time(data["at"])}


class Mirror:
    """Tickets and messages as the API shows them, built from the changes feed."""

    def __init__(self) -> None:
        self.after_seq = 0
        self.tickets: dict[str, Json] = {}
        self.messages: dict[str, list[Json]] = {}
        self.folders: dict[str, Callable[[Json], None]] = {"ticket": self._ticket}

    def apply_page(self, page: Mapping[str, Any]) -> None:
        """Apply one answer of ``GET /v1/changes?after_seq=<self.after_seq>``."""
        for change in page["data"]:
            self.apply(change)
        if page["next_after_seq"] < self.after_seq:
            raise MirrorError(f"next_after_seq {page['next_after_seq']} goes back")
        self.after_seq = page["next_after_seq"]

    def apply(self, change: Mapping[str, Any]) -> None:
        """Apply one change; its seq must be beyond every seq applied so far."""
        if change["seq"] <= self.after_seq:
            raise MirrorError(f"seq {change['seq']} again (after {self.after_seq})")
        folder = self.folders.get(change["stream_type"])
        if folder is not None:
            folder(dict(change))
        self.after_seq = change["seq"]

    def ticket_messages(self, ticket_id: str) -> list[Json]:
        """A ticket's messages in the list's order (oldest first)."""
        return sorted(self.messages.get(ticket_id, []),
                      key=lambda m: (m["created_at"], m["id"]))

    def _ticket(self, change: Json) -> None:
        stream, data, kind = change["stream_id"], change["data"], change["type"]
        at = _time(data["at"])
        if kind == "TicketOpened":
            if stream in self.tickets or change["version"] != 1:
                raise MirrorError(f"ticket {stream} opened twice")
            self.tickets[stream] = _opened(stream, data)
            self.messages[stream] = [_message(stream, data, "public")]
            return
        t = self.tickets.get(stream)
        if t is None or change["version"] != t["version"] + 1:
            raise MirrorError(f"ticket {stream} event version {change['version']} out of order")
        t["version"] += 1
        if kind != "SlaBreached":
            # A breach is the scheduler's observation, not a change a customer sees.
            t["updated_at"] = at
        clocks = data.get("clocks") or {}
        for metric, clock in clocks.items():
            t["sla"][metric] = _clock(clock)
        if kind == "MessageAdded":
            self.messages[stream].append(_message(stream, data, data["visibility"]))
            if data["visibility"] == "public":
                if data["author"]["kind"] == "customer":
                    t["awaiting_reply"] = True
                elif data["author"]["kind"] == "agent":
                    t["awaiting_reply"] = False
        elif kind == "TicketAssigned":
            t["assignee"] = data["assignee"]
        elif kind == "PriorityChanged":
            t["priority"] = data["priority"]
        elif kind == "StateChanged":
            _state_changed(t, data, at)
        elif kind == "TagsChanged":
            t["tags"] = list(data["tags"])
        elif kind == "SlaBreached":
            clock = t["sla"][data["metric"]]
            if clock["breached_at"] is None:
                clock["breached_at"] = at
        elif kind == "FollowUpOpened":
            t["follow_up_ids"].append(data["follow_up_id"])


def _opened(stream: str, data: Mapping[str, Any]) -> Json:
    at = _time(data["at"])
    requester = data["requester"]
    return {
        "id": stream, "version": 1, "state": "open", "subject": data["subject"],
        "requester": {"email": requester["email"], "name": requester.get("name")},
        "priority": data["priority"], "source": data["source"], "tags": list(data["tags"]),
        "assignee": None, "follow_up_of": data.get("follow_up_of"), "follow_up_ids": [],
        "created_at": at, "updated_at": at, "solved_at": None, "closed_at": None,
        "reopen_count": 0, "awaiting_reply": data["author"]["kind"] == "customer",
        "sla": {m: _clock(data["clocks"][m]) for m in SLA_METRICS},
    }


def _state_changed(t: Json, data: Mapping[str, Any], at: str | None) -> None:
    if data["from_state"] != t["state"]:
        raise MirrorError(f"ticket {t['id']} moved from {data['from_state']}, "
                          f"but the mirror has it {t['state']}")
    t["state"] = data["to_state"]
    if data["to_state"] == "solved":
        t["solved_at"] = at
    elif data["to_state"] == "closed":
        t["closed_at"] = at
    elif data["from_state"] == "solved":
        t["reopen_count"] += 1
        t["solved_at"] = None


def changes_as_feed(changes: Iterable[Mapping[str, Any]], room: str = "tenant"
                    ) -> list[Json]:
    """Changes in the live feed's message shape (``docs/websocket.md``), for code
    that handles feed messages and now reads a page of changes too."""
    out = []
    for c in changes:
        event = {k: v for k, v in c.items() if k != "seq"}
        out.append({"type": "event", "room": room, "seq": c["seq"], "event": event})
    return out


__all__ = ["Mirror", "MirrorError", "changes_as_feed"]
