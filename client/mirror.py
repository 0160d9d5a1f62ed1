"""A mirror of a desk, kept by folding pages of ``GET /v1/changes``.

``Mirror.apply_page`` takes one page as the API answers it; applying every page from
``after_seq=0`` rebuilds each ticket as ``GET /v1/tickets/{id}`` returns it, each
ticket's messages as ``GET /v1/tickets/{id}/messages`` lists them, each contact as
``GET /v1/contacts/{id}`` and each organization as ``GET /v1/organizations/{id}``
(compared as JSON values). A split moves messages from one ticket's list to the new
ticket's. A merged contact is kept with ``merged_into`` set, the
survivor its ``GET`` redirects to (``Mirror.contact`` follows it). The client keeps
``after_seq``, the one number it needs to resume::

    mirror = Mirror()
    while True:
        page = http.get("/v1/changes", params={"after_seq": mirror.after_seq}).json()
        mirror.apply_page(page)
        if mirror.after_seq >= page["head_seq"]:
            break  # caught up; poll again later, or follow the live feed

Each change is dispatched on its ``stream_type`` to that kind's folder (``FOLDERS``);
kinds this client does not mirror (``group``, ``ticket_field``, and ``tenant``: keys,
agents, settings) are skipped,
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
            "breached_at": _time(clock.get("breached_at")),
            "warned_at": _time(clock.get("warned_at"))}


def _message(ticket_id: str, data: Mapping[str, Any], visibility: str) -> Json:
    author = data["author"]
    return {"id": data["message_id"], "ticket_id": ticket_id, "visibility": visibility,
            "author": {"kind": author["kind"], "id": author["id"]}, "body": data["body"],
            "created_at": _time(data["at"]),
            # Each file's identity (id, name, size, type, sha256); the bytes are
            # fetched from GET /v1/attachments/{id} when wanted.
            "attachments": list(data.get("attachments", []))}


class Mirror:
    """Tickets, messages, contacts and organizations as the API shows them, built from
    the changes feed."""

    def __init__(self) -> None:
        self.after_seq = 0
        self.tickets: dict[str, Json] = {}
        self.messages: dict[str, list[Json]] = {}
        self.contacts: dict[str, Json] = {}
        self.merged_into: dict[str, str] = {}
        """Merged contacts and the contact each was merged into."""
        self.organizations: dict[str, Json] = {}
        self.folders: dict[str, Callable[[Json], None]] = {
            "ticket": self._ticket, "contact": self._contact,
            "organization": self._organization}

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
        """A ticket's messages in the list's order (oldest first): with those of the
        tickets merged into it, as its thread lists them."""
        thread = [ticket_id, *self.tickets.get(ticket_id, {}).get("merged_from", [])]
        return sorted((m for t in thread for m in self.messages.get(t, [])),
                      key=lambda m: (m["created_at"], m["id"]))

    def _move(self, source: str, into: str, message_ids: Iterable[str]) -> None:
        """A split's messages leave ``source``'s list for ``into``'s, each with its
        ``ticket_id`` now ``into``: done by whichever of the split's two events comes
        first, and a no-op for the other."""
        ids = set(message_ids)
        held = self.messages.get(source, [])
        moving = [m for m in held if m["id"] in ids]
        self.messages[source] = [m for m in held if m["id"] not in ids]
        target = self.messages.setdefault(into, [])
        target += [{**m, "ticket_id": into} for m in moving]
        target.sort(key=lambda m: (m["created_at"], m["id"]))

    def contact(self, contact_id: str) -> Json:
        """The contact, or the one it was merged into (as its ``GET`` redirects)."""
        while contact_id in self.merged_into:
            contact_id = self.merged_into[contact_id]
        return self.contacts[contact_id]

    def _contact(self, change: Json) -> None:
        stream, data, kind = change["stream_id"], change["data"], change["type"]
        at = _time(data["at"])
        if kind == "ContactCreated":
            if stream in self.contacts or change["version"] != 1:
                raise MirrorError(f"contact {stream} created twice")
            self.contacts[stream] = {"id": stream, "version": 1, **_contact_fields(data),
                                     "created_at": at, "updated_at": at}
            return
        c = _next(self.contacts, "contact", change)
        c["updated_at"] = at
        if kind == "ContactUpdated":
            c.update(_contact_fields(data))
        elif kind == "ContactMerged":
            self.merged_into[stream] = data["into"]

    def _organization(self, change: Json) -> None:
        stream, data, kind = change["stream_id"], change["data"], change["type"]
        at = _time(data["at"])
        if kind == "OrganizationCreated":
            if stream in self.organizations or change["version"] != 1:
                raise MirrorError(f"organization {stream} created twice")
            self.organizations[stream] = {
                "id": stream, "version": 1, "name": data["name"],
                "domains": list(data["domains"]), "created_at": at, "updated_at": at}
            return
        o = _next(self.organizations, "organization", change)
        o["updated_at"] = at
        if kind == "OrganizationUpdated":
            o["name"], o["domains"] = data["name"], list(data["domains"])

    def _ticket(self, change: Json) -> None:
        stream, data, kind = change["stream_id"], change["data"], change["type"]
        at = _time(data["at"])
        if kind == "TicketOpened":
            if stream in self.tickets or change["version"] != 1:
                raise MirrorError(f"ticket {stream} opened twice")
            self.tickets[stream] = _opened(stream, data)
            self.messages[stream] = [_message(stream, data, "public")]
            return
        if kind == "TicketSplitFrom":
            if stream in self.tickets or change["version"] != 1:
                raise MirrorError(f"ticket {stream} opened twice")
            # Its files are the moved messages', each naming its own message.
            split = _opened(stream, {**data, "attachments": []})
            split.update(follow_up_of=None, awaiting_reply=data["awaiting_reply"],
                         attachments=list(data.get("attachments", [])),
                         split_from=data["source_id"])
            self.tickets[stream] = split
            self._move(data["source_id"], stream, data["message_ids"])
            return
        t = self.tickets.get(stream)
        if t is None or change["version"] != t["version"] + 1:
            raise MirrorError(f"ticket {stream} event version {change['version']} out of order")
        t["version"] += 1
        if kind not in ("SlaBreached", "SlaWarning", "RequesterChanged"):
            # A breach is the scheduler's observation and a move between contacts is
            # bookkeeping: neither is a change a customer sees.
            t["updated_at"] = at
        clocks = data.get("clocks") or {}
        for metric, clock in clocks.items():
            t["sla"][metric] = _clock(clock)
        if kind == "MessageAdded":
            self.messages[stream].append(_message(stream, data, data["visibility"]))
            if data["visibility"] == "public":
                t["attachments"] += _files(data)
            if data["visibility"] == "public":
                if data["author"]["kind"] == "customer":
                    t["awaiting_reply"] = True
                elif data["author"]["kind"] == "agent":
                    t["awaiting_reply"] = False
        elif kind == "TicketAssigned":
            t["assignee"] = data["assignee"]
        elif kind == "TicketGroupChanged":
            t["group_id"] = data["group_id"]
        elif kind == "FieldValuesChanged":
            fields = {**t["fields"], **data["values"]}
            t["fields"] = {k: v for k, v in sorted(fields.items()) if v is not None}
        elif kind == "RequesterChanged":
            t["requester"] = _requester(data["requester"])
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
        elif kind == "SlaWarning":
            clock = t["sla"][data["metric"]]
            if clock["warned_at"] is None:
                clock["warned_at"] = at
        elif kind == "FollowUpOpened":
            t["follow_up_ids"].append(data["follow_up_id"])
        elif kind == "TicketSplit":
            gone = set(data["message_ids"])
            t["attachments"] = [a for a in t["attachments"] if a["message_id"] not in gone]
            t["awaiting_reply"] = data["awaiting_reply"]
            t["split_into"] = [*t.get("split_into", []), data["into"]]
            self._move(stream, data["into"], data["message_ids"])
        else:
            _teamwork(t, kind, data)


_LINK_KEYS = {"related": "related", "duplicate_of": "duplicate_of",
              "duplicates": "duplicates", "problem": "problem", "incident": "incidents"}


def _teamwork(t: Json, kind: str, data: Mapping[str, Any]) -> None:
    """Merges, links, followers, CCs and the satisfaction rating: each key only while
    the ticket has any, as ``GET`` shows them."""
    if kind == "TicketMerged":
        t["merged_into"] = data["into"]
    elif kind == "TicketMergeReceived":
        merged = t.setdefault("merged_from", [])
        merged += [m for m in data["merged_ids"] if m not in merged]
        ccs = [*t.get("ccs", []), *map(_requester, data.get("ccs", []))]
        if ccs:
            t["ccs"] = ccs
    elif kind in ("TicketLinked", "TicketUnlinked"):
        links = t.pop("links", None) or {"related": [], "duplicate_of": None,
                                         "duplicates": [], "problem": None, "incidents": []}
        key, other = _LINK_KEYS[data["kind"]], data["ticket_id"]
        if isinstance(links[key], list):
            links[key] = ([*links[key], other] if kind == "TicketLinked"
                          and other not in links[key]
                          else [x for x in links[key] if x != other or kind == "TicketLinked"])
        else:
            links[key] = other if kind == "TicketLinked" else None
        if any(links.values()):
            t["links"] = links
    elif kind == "FollowersChanged":
        t.pop("followers", None)
        if data["followers"]:
            t["followers"] = list(data["followers"])
    elif kind == "CcsChanged":
        t.pop("ccs", None)
        if data["ccs"]:
            t["ccs"] = [_requester(c) for c in data["ccs"]]
    elif kind == "SatisfactionRated":
        t["satisfaction"] = {"rating": data["rating"], "comment": data.get("comment"),
                             "via": data["via"], "rated_at": _time(data["at"])}


def _next(held: dict[str, Json], name: str, change: Mapping[str, Any]) -> Json:
    """The entity a change continues, its version moved on; MirrorError if it does not."""
    entity = held.get(change["stream_id"])
    if entity is None or change["version"] != entity["version"] + 1:
        raise MirrorError(f"{name} {change['stream_id']} event version {change['version']} "
                          "out of order")
    entity["version"] += 1
    return entity


def _contact_fields(data: Mapping[str, Any]) -> Json:
    return {"email": data["email"], "name": data.get("name"), "phone": data.get("phone"),
            "external_id": data.get("external_id"),
            "organization_id": data.get("organization_id"), "tags": list(data.get("tags", []))}


def _requester(requester: Mapping[str, Any]) -> Json:
    return {"contact_id": requester.get("contact_id"), "email": requester["email"],
            "name": requester.get("name")}


def _opened(stream: str, data: Mapping[str, Any]) -> Json:
    at = _time(data["at"])
    return {
        "id": stream, "version": 1, "state": "open", "subject": data["subject"],
        "requester": _requester(data["requester"]),
        "priority": data["priority"], "source": data["source"], "tags": list(data["tags"]),
        "assignee": None, "group_id": None,  # a group comes by TicketGroupChanged
        "follow_up_of": data.get("follow_up_of"), "follow_up_ids": [],
        "created_at": at, "updated_at": at, "solved_at": None, "closed_at": None,
        "reopen_count": 0, "awaiting_reply": data["author"]["kind"] == "customer",
        "sla": {m: _clock(data["clocks"][m]) for m in SLA_METRICS},
        "fields": dict(sorted(data.get("fields", {}).items())),
        "attachments": _files(data),
    }


def _files(data: Mapping[str, Any]) -> list[Json]:
    """A message's files as the ticket lists them: each with the message's id."""
    return [{**a, "message_id": data["message_id"]} for a in data.get("attachments", [])]


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
