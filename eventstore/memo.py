"""A process's memory of what units of work derive from a tenant's rows, kept with the
revision of those rows it was derived at.

What a command parses from a tenant's configuration (its SLA policies, say) is the
same from one command to the next until the configuration changes. A caller that
keeps a revision of its rows (a value its writers change in the writing transaction)
reads that revision in its own transaction and asks the memo for what it derived at
it: only an equal revision is a hit, so a change committed by any process is seen by
the next unit of work that reads the new revision, and nothing expires by time.
Whether a revision names one state for good is the caller's to guarantee.

One memo per store (``EventStore.memo``), handed to each unit of work; bounded, the
least recently used tenant out first. Units of work of one process run on one event
loop, so the memo needs no lock.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass
from typing import Any, Generic, TypeVar, cast

from domain.ids import TenantId

T = TypeVar("T")

MEMO_ENTRIES = 512
"""How many (kind, tenant) entries a memo keeps by default."""


@dataclass(frozen=True, slots=True)
class MemoKind(Generic[T]):
    """One kind of derived value (its name keys it; ``T`` is its type)."""

    name: str


class TenantMemo:
    """Derived values per (kind, tenant), each with the revision it was derived at."""

    def __init__(self, size: int = MEMO_ENTRIES) -> None:
        if size < 1:
            raise ValueError("a memo keeps at least one entry")
        self.size = size
        self._entries: OrderedDict[tuple[str, TenantId], tuple[int, Any]] = OrderedDict()

    def get(self, kind: MemoKind[T], tenant: TenantId) -> tuple[int, T] | None:
        """``(revision, value)`` kept for the tenant, or None."""
        key = (kind.name, tenant)
        entry = self._entries.get(key)
        if entry is None:
            return None
        self._entries.move_to_end(key)
        return entry[0], cast(T, entry[1])

    def put(self, kind: MemoKind[T], tenant: TenantId, revision: int, value: T) -> None:
        """Keep ``value`` as derived at ``revision``, in place of what was kept."""
        key = (kind.name, tenant)
        self._entries[key] = (revision, value)
        self._entries.move_to_end(key)
        while len(self._entries) > self.size:
            self._entries.popitem(last=False)

    def __len__(self) -> int:
        return len(self._entries)


__all__ = ["MEMO_ENTRIES", "MemoKind", "TenantMemo"]
