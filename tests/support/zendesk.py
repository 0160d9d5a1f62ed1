"""A Zendesk export written for the tests, in the files an account's export produces
(handlers/zendesk_export.py): organizations, users of both kinds, groups and their
members, ticket fields, tickets with comments, attachments and custom field values,
and the bad records an import must report one by one (``ZendeskExport.bad``)."""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import orjson

START = datetime(2025, 3, 3, 8, 0, tzinfo=UTC)
STATUSES = ("new", "open", "pending", "hold", "solved", "closed")
PRIORITIES = ("low", "normal", "high", "urgent", None)
PLANS = ("basic", "pro", "enterprise")
PLAN_FIELD, ORDER_FIELD, VIP_FIELD, SUBJECT_FIELD = 9001, 9002, 9003, 9004


def zd_time(at: datetime) -> str:
    return at.strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass
class ZendeskExport:
    """What was written, for the tests to compare the import with."""

    directory: Path
    organizations: dict[int, dict[str, Any]] = field(default_factory=dict)
    users: dict[int, dict[str, Any]] = field(default_factory=dict)
    groups: dict[int, dict[str, Any]] = field(default_factory=dict)
    memberships: list[dict[str, Any]] = field(default_factory=list)
    tickets: dict[int, dict[str, Any]] = field(default_factory=dict)
    comments: dict[int, list[dict[str, Any]]] = field(default_factory=dict)
    files: dict[int, bytes] = field(default_factory=dict)
    """Each attachment's bytes, by attachment id (the ones written)."""
    bad: set[tuple[str, str]] = field(default_factory=set)
    """(kind, id) of every record, or part of one, the import must report skipped."""

    @property
    def agents(self) -> dict[int, dict[str, Any]]:
        return {k: u for k, u in self.users.items() if u["role"] != "end-user"}


def write_export(directory: Path, *, tickets: int = 200, seed: int = 40,
                 per_ticket: int | None = None) -> ZendeskExport:
    """Write an export of ``tickets`` good tickets (and the bad records) to ``directory``;
    each ticket has ``per_ticket`` comments (None: one to five)."""
    rnd = random.Random(seed)
    out = ZendeskExport(directory)
    (directory / "ticket_comments").mkdir(parents=True)

    for n in range(1, 6):
        out.organizations[100 + n] = {
            "id": 100 + n, "name": f"Org {n}", "domain_names": [f"org{n}.example"],
            "created_at": zd_time(START - timedelta(days=30 - n))}
    for n in range(1, 7):
        uid = 200 + n
        out.users[uid] = {"id": uid, "name": f"Agent {n}", "email": f"agent{n}@desk.example",
                          "role": "admin" if n == 1 else "agent", "active": True,
                          "created_at": zd_time(START - timedelta(days=60))}
    for n in range(1, 41):
        uid = 1000 + n
        org = 100 + (n % 6) if n % 6 else None  # every sixth has no organization
        domain = f"org{org - 100}.example" if org else "mail.example"
        out.users[uid] = {"id": uid, "name": f"Customer {n}", "email": f"customer{n}@{domain}",
                          "role": "end-user", "organization_id": org,
                          "created_at": zd_time(START - timedelta(days=10, hours=n))}
    # Bad users: a second holder of an e-mail, and one with an invalid time.
    out.users[1100] = {"id": 1100, "name": "Customer 1 again", "email": "CUSTOMER1@org1.example",
                       "role": "end-user", "created_at": zd_time(START)}
    out.bad.add(("user", "1100"))
    out.users[1101] = {"id": 1101, "name": "Timeless", "email": "timeless@mail.example",
                       "role": "end-user", "created_at": "yesterday-ish"}
    out.bad.add(("user", "1101"))

    for n in range(1, 4):
        out.groups[300 + n] = {"id": 300 + n, "name": f"Tier {n}",
                               "created_at": zd_time(START - timedelta(days=50))}
    for i, agent in enumerate(range(201, 207)):
        out.memberships.append({"id": 400 + i, "user_id": agent, "group_id": 301 + i % 3})
    out.memberships.append({"id": 499, "user_id": 9999, "group_id": 301})
    out.bad.add(("group_membership", "499"))
    members = {g: [m["user_id"] for m in out.memberships if m["group_id"] == g
                   and m["user_id"] in out.users] for g in out.groups}

    fields = [
        {"id": PLAN_FIELD, "type": "tagger", "title": "Plan", "active": True,
         "custom_field_options": [{"name": p.title(), "value": p} for p in PLANS]},
        {"id": ORDER_FIELD, "type": "text", "title": "Order number", "active": True},
        {"id": VIP_FIELD, "type": "checkbox", "title": "VIP", "active": True},
        {"id": SUBJECT_FIELD, "type": "subject", "title": "Subject", "active": True},
    ]
    out.bad.add(("ticket_field", str(SUBJECT_FIELD)))

    customers = [u for u in out.users if 1000 < u < 1100]
    attachment_id = 70000
    comment_id = 50000
    for n in range(1, tickets + 1):
        tid = n
        requester = rnd.choice(customers)
        group = rnd.choice([None, *out.groups])
        assignee = rnd.choice(members[group]) if group is not None else rnd.choice(
            [None, *out.agents])
        opened = START + timedelta(hours=3 * n)
        status = STATUSES[n % len(STATUSES)]
        custom = [{"id": PLAN_FIELD, "value": rnd.choice(PLANS)},
                  {"id": ORDER_FIELD, "value": f"A-{n:05d}"},
                  {"id": VIP_FIELD, "value": n % 7 == 0}]
        comments = []
        for c in range(per_ticket if per_ticket is not None else rnd.randint(1, 5)):
            comment_id += 1
            by_agent = c > 0 and (c % 2 == 1)
            author = (assignee or 202) if by_agent else requester
            comment: dict[str, Any] = {
                "id": comment_id, "author_id": author,
                "body": f"Comment {c} on ticket {tid}: {'reply' if by_agent else 'question'}",
                "public": not (by_agent and c == 3),
                "created_at": zd_time(opened + timedelta(minutes=45 * c)), "attachments": []}
            if comment_id % 7 == 0:
                attachment_id += 1
                data = f"log {attachment_id}\n".encode() * 20
                name = f"log-{attachment_id}.txt"
                path = directory / "attachments" / str(attachment_id) / name
                path.parent.mkdir(parents=True)
                path.write_bytes(data)
                out.files[attachment_id] = data
                comment["attachments"].append({"id": attachment_id, "file_name": name,
                                               "content_type": "text/plain",
                                               "size": len(data)})
            comments.append(comment)
        last = comments[-1]["created_at"]
        ticket = {
            "id": tid, "subject": f"Ticket {tid} about {rnd.choice(['login', 'billing', 'sync'])}",
            "description": comments[0]["body"], "status": status,
            "priority": PRIORITIES[n % len(PRIORITIES)], "tags": sorted({f"t{n % 5}", "zd"}),
            "requester_id": requester, "assignee_id": assignee, "group_id": group,
            "custom_fields": custom, "created_at": zd_time(opened), "updated_at": last,
            "metric_set": {"reply_time_in_minutes": {"calendar": 45, "business": 45},
                           "full_resolution_time_in_minutes": (
                               {"calendar": 90, "business": 90}
                               if status in ("solved", "closed") else
                               {"calendar": None, "business": None}),
                           "solved_at": last if status in ("solved", "closed") else None}}
        out.tickets[tid] = ticket
        out.comments[tid] = comments

    # Bad records inside good tickets.
    out.tickets[5]["custom_fields"][0]["value"] = "platinum"  # outside the options
    out.bad.add(("ticket.field_value", "5"))
    comment_id += 1
    out.comments[6].append({"id": comment_id, "author_id": 8888, "body": "who?",
                            "public": True, "created_at": out.tickets[6]["created_at"],
                            "attachments": []})
    out.bad.add(("comment", str(comment_id)))
    comment_id += 1
    out.comments[7].append({"id": comment_id, "author_id": out.tickets[7]["requester_id"],
                            "body": "too early", "public": True,
                            "created_at": zd_time(START - timedelta(days=400)),
                            "attachments": []})
    out.bad.add(("comment", str(comment_id)))
    comment_id += 1
    out.comments[8].append({"id": comment_id, "author_id": out.tickets[8]["requester_id"],
                            "body": "when?", "public": True, "created_at": "31/02/2025",
                            "attachments": []})
    out.bad.add(("comment", str(comment_id)))
    out.comments[9][0]["attachments"].append({"id": 79999, "file_name": "gone.png",
                                              "content_type": "image/png", "size": 10})
    out.bad.add(("attachment", "79999"))
    # Bad tickets: an unknown requester, an invalid time; comments of a ticket not held.
    bad_ticket = dict(out.tickets[10], id=tickets + 1, requester_id=7777)
    out.tickets[tickets + 1] = bad_ticket
    out.bad.add(("ticket", str(tickets + 1)))
    out.tickets[tickets + 2] = dict(out.tickets[11], id=tickets + 2, created_at="not a time")
    out.bad.add(("ticket", str(tickets + 2)))
    out.comments[tickets + 3] = [dict(out.comments[12][0], id=comment_id + 1)]
    out.bad.add(("comment", f"ticket {tickets + 3}"))

    def write(name: str, doc: dict[str, Any]) -> None:
        (directory / name).write_bytes(orjson.dumps(doc))

    write("organizations.json", {"organizations": list(out.organizations.values()),
                                 "end_of_stream": True})
    users = list(out.users.values())
    half = len(users) // 2
    write("users.json", {"users": users[:half], "next_page": "users-2", "end_of_stream": False})
    write("users2.json", {"users": users[half:], "end_of_stream": True})
    write("groups.json", {"groups": list(out.groups.values())})
    write("group_memberships.json", {"group_memberships": out.memberships})
    write("ticket_fields.json", {"ticket_fields": fields})
    write("tickets.json", {"tickets": list(out.tickets.values()), "end_of_stream": True})
    for tid, comments in out.comments.items():
        write(f"ticket_comments/{tid}.json", {"comments": comments})
    return out


__all__ = ["ZendeskExport", "write_export", "zd_time"]
