"""The part of a unit of work that verifies the tenant's hash chain online: the head,
a stored hash, and the recomputation over a range (eventstore/chain.py holds the
chain's definition and the offline verification of exports)."""

from __future__ import annotations

from pathlib import Path

from eventstore.sqlfile import load_queries
from eventstore.types import ChainReport
from eventstore.unit import UnitState

Q = load_queries(Path(__file__).with_name("queries.sql"))

ZERO_HASH = bytes(32)


class ChainVerification(UnitState):
    """Chain verification (mixed into ``eventstore.store.UnitOfWork``)."""

    async def hash_at(self, seq: int) -> bytes | None:
        """The chain hash stored with event ``seq`` (None: no such event)."""
        value = await self.conn.fetchval(Q["hash_at"], self.tenant_id, seq)
        return None if value is None else bytes(value)

    async def head(self) -> tuple[int, bytes]:
        """The tenant's head: last assigned seq and its hash."""
        row = await self.conn.fetchrow(Q["head"], self.tenant_id)
        if row is None:
            return 0, ZERO_HASH
        return row["seq"], bytes(row["hash"])

    async def verify_chain(self, from_seq: int = 1, to_seq: int | None = None) -> ChainReport:
        """Recompute the hash chain over ``from_seq..to_seq`` (default: to the head).

        Reports the first seq whose event was altered, removed or reordered.
        """
        head_seq, head_hash = await self.head()
        end = head_seq if to_seq is None else min(to_seq, head_seq)
        start = max(from_seq, 1)
        if end < start:
            return ChainReport(ok=True, checked=0, head_seq=head_seq, first_bad_seq=None)
        row = await self.conn.fetchrow(Q["verify_chain"], self.tenant_id, start, end)
        assert row is not None
        first_bad: int | None = row["first_bad"]
        last_seq: int | None = row["last_seq"]
        if first_bad is None and (last_seq is None or last_seq < end):
            # Rows at the end of the range are gone.
            first_bad = (last_seq or start - 1) + 1
        if (
            first_bad is None
            and end == head_seq
            and row["last_hash"] is not None
            and bytes(row["last_hash"]) != head_hash
        ):
            first_bad = head_seq
        return ChainReport(
            ok=first_bad is None,
            checked=int(row["checked"]),
            head_seq=head_seq,
            first_bad_seq=first_bad,
        )
