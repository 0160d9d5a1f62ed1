"""A Zendesk export as files, read into records for the importer (handlers/zendesk_import.py).

The directory holds what a Zendesk account's export or its API writes (docs/import.md):

    organizations*.json        incremental export pages: {"organizations": [...]}
    users*.json                incremental export pages: {"users": [...]}
    tickets*.json              incremental export pages: {"tickets": [...]}, each ticket
                               perhaps with its "metric_set" (include=metric_sets)
    groups.json                {"groups": [...]}
    group_memberships.json     {"group_memberships": [...]}
    ticket_fields.json         {"ticket_fields": [...]}
    ticket_comments/<ticket id>.json   {"comments": [...]}, a ticket's comments
    attachments/<attachment id>/<file name>   the files the comments name

Pages are read in the order of their names; a record that a later page repeats (the
incremental export repeats a record each time it changes) replaces the earlier one.
Nothing here touches the network or the database, and nothing here decides what a
record becomes: it reads, and says what it could not read.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson


@dataclass(frozen=True, slots=True)
class Skipped:
    """A record, or a part of one, that was not imported, and why (the reader's: a file
    or record it could not use; the import's: one it refused)."""

    kind: str
    source_id: str
    reason: str


@dataclass(slots=True)
class Export:
    """The records of one export, by kind, each by its Zendesk id (as text)."""

    directory: Path
    organizations: dict[str, dict[str, Any]] = field(default_factory=dict)
    users: dict[str, dict[str, Any]] = field(default_factory=dict)
    groups: dict[str, dict[str, Any]] = field(default_factory=dict)
    memberships: list[dict[str, Any]] = field(default_factory=list)
    ticket_fields: dict[str, dict[str, Any]] = field(default_factory=dict)
    tickets: dict[str, dict[str, Any]] = field(default_factory=dict)
    comments: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    """Each ticket's comments, by the ticket id their file is named for."""
    unreadable: list[Skipped] = field(default_factory=list)

    def attachment_path(self, attachment: dict[str, Any]) -> Path | None:
        """Where the export keeps an attachment's file; None when it names no usable
        file (no id, or a name that would leave its directory)."""
        name = str(attachment.get("file_name") or "")
        if attachment.get("id") is None or not name or "/" in name or "\\" in name \
                or name in (".", ".."):
            return None
        return self.directory / "attachments" / str(attachment["id"]) / name


def parse_time(value: Any) -> datetime | None:
    """A Zendesk time (ISO 8601, ``Z`` or an offset) as an aware UTC datetime; None
    when it is missing or not a time."""
    if not isinstance(value, str) or not value:
        return None
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    if parsed.tzinfo is None:
        return None
    return parsed.astimezone(UTC)


def _load(path: Path, out: list[Skipped]) -> Any:
    try:
        return orjson.loads(path.read_bytes())
    except (OSError, orjson.JSONDecodeError) as exc:
        out.append(Skipped("file", path.name, f"cannot read {path.name}: {exc}"))
        return None


def _records(doc: Any, key: str) -> Iterator[dict[str, Any]]:
    if isinstance(doc, dict) and isinstance(doc.get(key), list):
        yield from (r for r in doc[key] if isinstance(r, dict))


def _keyed(directory: Path, pattern: str, key: str, into: dict[str, dict[str, Any]],
           out: list[Skipped]) -> None:
    for path in sorted(directory.glob(pattern)):
        for record in _records(_load(path, out), key):
            if record.get("id") is None:
                out.append(Skipped(key, "?", f"a record in {path.name} has no id"))
                continue
            into[str(record["id"])] = record


def read_export(directory: Path) -> Export:
    """Every record of the export in ``directory``; a file that is absent is a kind
    with no records, one that cannot be read is reported in ``unreadable``."""
    export = Export(directory)
    bad = export.unreadable
    _keyed(directory, "organizations*.json", "organizations", export.organizations, bad)
    _keyed(directory, "users*.json", "users", export.users, bad)
    _keyed(directory, "groups.json", "groups", export.groups, bad)
    _keyed(directory, "ticket_fields.json", "ticket_fields", export.ticket_fields, bad)
    _keyed(directory, "tickets*.json", "tickets", export.tickets, bad)
    memberships = directory / "group_memberships.json"
    if memberships.exists():
        export.memberships = list(_records(_load(memberships, bad), "group_memberships"))
    comments = directory / "ticket_comments"
    if comments.is_dir():
        for path in sorted(comments.glob("*.json")):
            export.comments[path.stem] = list(_records(_load(path, bad), "comments"))
    return export


__all__ = ["Export", "Skipped", "parse_time", "read_export"]
