"""Personal fields of event data, sealed with their subject's data key.

A sealed field is stored as ``{"sealed": <base64 of nonce || AES-256-GCM ciphertext>,
"subject": <contact id>}`` in place of its text. The associated data binds the
tenant, stream, version and field path (and the subject), so a ciphertext copied
into another event, or another field of the same event, fails to open. The chain
hashes the stored data, ciphertext and all: erasing a key changes no stored byte.

On read a sealed field opens to its text while its key exists, to
``{"erased": true}`` once the subject was erased, and to ``{"unreadable": true}``
(reported, never shown as data) when it fails to open. Pure computation: the keys
come from ``eventstore/keys.py``.

Nothing here knows which fields are personal: the writer names the paths to seal
(the domain declares them, domain/personal.py), and a reader finds the sealed values
wherever they stand in a payload, by their shape.
"""

from __future__ import annotations

import base64
import os
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from uuid import UUID

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

FieldPath = tuple[str, ...]
"""Keys from the top of an event's stored data to one field, e.g. ``("requester", "email")``."""

NONCE_BYTES = 12
ERASED: Mapping[str, bool] = {"erased": True}
UNREADABLE: Mapping[str, bool] = {"unreadable": True}


@dataclass(frozen=True, slots=True)
class Place:
    """Where a field sits: what its ciphertext is bound to."""

    tenant_id: UUID
    stream_id: UUID
    version: int

    def aad(self, path: FieldPath, subject: UUID) -> bytes:
        return (f"helpdesk/1|{self.tenant_id}|{self.stream_id}|{self.version}|"
                f"{'.'.join(path)}|{subject}").encode()


@dataclass(frozen=True, slots=True)
class Broken:
    """A sealed field that did not open with its subject's key: moved or altered."""

    place: Place
    path: FieldPath
    subject: UUID


def is_sealed(value: Any) -> bool:
    """Whether a stored value is a sealed field."""
    return isinstance(value, dict) and "sealed" in value and "subject" in value


def seal(data: Mapping[str, Any], paths: Sequence[FieldPath], place: Place, subject: UUID,
         key: bytes) -> dict[str, Any]:
    """``data`` with the text at each of ``paths`` sealed with ``key`` (a path that is
    missing, or holds no text, is left as it is)."""
    cipher = AESGCM(key)

    def one(path: FieldPath, value: Any) -> Any:
        if not isinstance(value, str):
            return value  # None (nothing said) or already sealed
        nonce = os.urandom(NONCE_BYTES)
        box = cipher.encrypt(nonce, value.encode("utf-8"), place.aad(path, subject))
        return {"sealed": base64.b64encode(nonce + box).decode("ascii"),
                "subject": str(subject)}

    return _rewrite(data, paths, one)


def sealed_paths(data: Mapping[str, Any]) -> Iterator[FieldPath]:
    """The paths of ``data`` that hold a sealed field, wherever they stand (in lists
    too: a step into a list is the item's index as text)."""

    def walk(node: Any, at: FieldPath) -> Iterator[FieldPath]:
        items = (node.items() if isinstance(node, Mapping)
                 else ((str(i), v) for i, v in enumerate(node)))
        for key, value in items:
            if is_sealed(value):
                yield (*at, key)
            elif isinstance(value, Mapping | list):
                yield from walk(value, (*at, key))

    return walk(data, ())


def subjects(data: Mapping[str, Any]) -> set[UUID]:
    """The subjects whose keys the sealed fields of ``data`` need."""
    return {UUID(_at(data, path)["subject"]) for path in sealed_paths(data)}


def open_sealed(data: Mapping[str, Any], place: Place, keys: Mapping[UUID, bytes | None]
                ) -> tuple[dict[str, Any], list[Broken]]:
    """``data`` with its sealed fields opened (or marked erased or unreadable), and
    the fields that failed to open. ``keys`` maps a subject to its data key, None
    for an erased subject; a subject missing from it counts as erased."""
    broken: list[Broken] = []

    def one(path: FieldPath, value: Any) -> Any:
        subject = UUID(value["subject"])
        key = keys.get(subject)
        if key is None:
            return dict(ERASED)
        raw = base64.b64decode(value["sealed"])
        try:
            text = AESGCM(key).decrypt(raw[:NONCE_BYTES], raw[NONCE_BYTES:],
                                       place.aad(path, subject))
        except InvalidTag:
            broken.append(Broken(place, path, subject))
            return dict(UNREADABLE)
        return text.decode("utf-8")

    return _rewrite(data, tuple(sealed_paths(data)), one), broken


def _at(data: Mapping[str, Any], path: FieldPath) -> Any:
    value: Any = data
    for key in path:
        value = value[int(key)] if isinstance(value, list) else value[key]
    return value


def _rewrite(data: Mapping[str, Any], paths: Sequence[FieldPath], fn: Any) -> dict[str, Any]:
    """``data`` with the value at each path replaced by ``fn(path, value)``, copying
    what it changes on the way (a path that is missing is left alone)."""

    def step(node: Any, path: FieldPath, whole: FieldPath) -> Any:
        key, rest = path[0], path[1:]
        if isinstance(node, list):
            if not key.isdigit() or int(key) >= len(node):
                return node
            out_list = list(node)
            index = int(key)
            out_list[index] = (fn(whole, node[index]) if not rest
                               else step(node[index], rest, whole))
            return out_list
        if not isinstance(node, Mapping) or key not in node:
            return node
        out_map = dict(node)
        out_map[key] = fn(whole, node[key]) if not rest else step(node[key], rest, whole)
        return out_map

    out: Any = dict(data)
    for path in paths:
        out = step(out, path, path)
    return dict(out)


__all__ = ["ERASED", "UNREADABLE", "Broken", "FieldPath", "Place", "is_sealed", "open_sealed",
           "seal", "sealed_paths", "subjects"]
