"""Which event fields hold personal data, and whose.

The store writes these fields encrypted with a key of their data subject (a contact)
and erasing the subject destroys the key (crypto-shredding: the hash chain covers the
ciphertext, so it still verifies afterwards). Declared here, in the domain, because
what is personal is a fact about the events, not about how they are stored.

The subject of a contact's events is the contact (its stream id); of a ticket's
events, the ticket's requester contact (``requester.contact_id`` on the events that
carry the requester, the ticket's current requester for the others).

The names of a message's files (``attachments`` of ``MessageAdded`` and
``TicketOpened``) are personal too: a file's name speaks of its owner as its bytes do.

Ticket field values (``fields`` of ``TicketOpened``, ``values`` of
``FieldValuesChanged``) are personal when their field is declared ``personal``
(domain/fields.py). Which ones is the tenant's say as each command is decided, so the
writer names them (``paths_in(..., fields=...)``); a reader needs no definitions, it
opens every value that is sealed.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from types import MappingProxyType
from typing import Any
from uuid import UUID

FieldPath = tuple[str, ...]
"""Keys from the top of an event's stored data to one field, e.g. ``("requester", "email")``."""

_CONTACT = (("email",), ("name",), ("phone",), ("external_id",))
_REQUESTER = (("requester", "email"), ("requester", "name"))

PERSONAL_FIELDS: Mapping[str, tuple[FieldPath, ...]] = MappingProxyType({
    "ContactCreated": _CONTACT,
    "ContactUpdated": _CONTACT,
    "TicketOpened": (("subject",), ("body",), *_REQUESTER),
    "TicketSplitFrom": (("subject",), *_REQUESTER),
    "RequesterChanged": _REQUESTER,
    # Every message on a contact's ticket: the contact's own, and an agent's answer,
    # which quotes or speaks of them as a rule.
    "MessageAdded": (("body",),),
})
"""Event type -> the paths of its personal fields (current schema versions)."""

FIELD_VALUES: Mapping[str, FieldPath] = MappingProxyType({
    "TicketOpened": ("fields",),
    "TicketSplitFrom": ("fields",),
    "FieldValuesChanged": ("values",),
})
"""Event type -> where it carries ticket field values by key."""

FILE_NAMES: Mapping[str, FieldPath] = MappingProxyType({
    "TicketOpened": ("attachments",),
    "TicketSplitFrom": ("attachments",),
    "MessageAdded": ("attachments",),
})
"""Event type -> where it lists a message's files, each of whose ``name`` is personal
(a path into the list names an item by its index as text: ``("attachments", "0",
"name")``)."""

_CC = (("email",), ("name",))
LISTED: Mapping[str, tuple[tuple[FieldPath, tuple[FieldPath, ...]], ...]] = MappingProxyType({
    "CcsChanged": ((("added",), _CC), (("ccs",), _CC), (("removed",), ((),))),
    "TicketMergeReceived": ((("ccs",), _CC),),
})
"""Event type -> the lists it carries whose items hold personal fields, each with the
fields of an item (``()``: the item itself, an e-mail): a ticket's CCs, sealed with
its requester's key as its messages are."""

CONTACT_EVENTS = frozenset({"ContactCreated", "ContactUpdated"})
"""Events whose subject is their own stream (the contact)."""


def personal_paths(type_: str) -> tuple[FieldPath, ...]:
    """The personal fields of an event type (none for most types)."""
    return PERSONAL_FIELDS.get(type_, ())


def may_be_personal(type_: str) -> bool:
    """Whether events of this type can hold personal data at all."""
    return (type_ in PERSONAL_FIELDS or type_ in FIELD_VALUES or type_ in FILE_NAMES
            or type_ in LISTED)


def paths_in(type_: str, data: Mapping[str, Any],
             fields: Collection[str] | None = None) -> tuple[FieldPath, ...]:
    """The personal fields of an event payload: those of its type, and its ticket field
    values of the keys in ``fields`` (the fields declared personal, for a writer), or
    all of them (None, for a reader: only a sealed value is opened)."""
    where = FIELD_VALUES.get(type_)
    values = field_at(data, where) if where is not None else None
    paths = personal_paths(type_) + _file_names(type_, data) + _listed(type_, data)
    if where is None or not isinstance(values, Mapping):
        return paths
    return paths + tuple((*where, key) for key in values
                         if fields is None or key in fields)


def _file_names(type_: str, data: Mapping[str, Any]) -> tuple[FieldPath, ...]:
    where = FILE_NAMES.get(type_)
    files = field_at(data, where) if where is not None else None
    if where is None or not isinstance(files, list):
        return ()
    return tuple((*where, str(i), "name") for i in range(len(files)))


def _listed(type_: str, data: Mapping[str, Any]) -> tuple[FieldPath, ...]:
    out: list[FieldPath] = []
    for where, item_paths in LISTED.get(type_, ()):
        items = field_at(data, where)
        if isinstance(items, list):
            out += [(*where, str(i), *sub) for i in range(len(items)) for sub in item_paths]
    return tuple(out)


def declared_subject(type_: str, stream_id: UUID, data: Mapping[str, Any]) -> UUID | None:
    """The data subject an event names by itself: the contact for a contact's events,
    the requester contact for the events that carry the requester; None when the
    event does not say (a message: the caller knows the ticket's requester)."""
    if type_ in CONTACT_EVENTS:
        return stream_id
    requester = data.get("requester")
    if isinstance(requester, Mapping) and requester.get("contact_id") is not None:
        return UUID(str(requester["contact_id"]))
    return None


def field_at(data: Mapping[str, Any], path: FieldPath) -> Any:
    """The value at ``path`` in an event payload (None when any step is missing); a
    step into a list is the item's index as text."""
    value: Any = data
    for key in path:
        if isinstance(value, list) and key.isdigit() and int(key) < len(value):
            value = value[int(key)]
        elif isinstance(value, Mapping) and key in value:
            value = value[key]
        else:
            return None
    return value


def path_text(path: FieldPath) -> str:
    """A field path as text (``requester.email``), as it is bound into a ciphertext."""
    return ".".join(path)


__all__ = ["CONTACT_EVENTS", "FIELD_VALUES", "FILE_NAMES", "LISTED", "PERSONAL_FIELDS", "FieldPath",
           "declared_subject", "field_at", "may_be_personal", "path_text", "paths_in",
           "personal_paths"]
