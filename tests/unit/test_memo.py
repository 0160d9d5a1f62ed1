"""The tenant memo: a hit is the revision kept, and it keeps at most its size, the
least recently used tenant out first."""

from __future__ import annotations

import uuid

from domain.ids import TenantId
from eventstore.memo import MemoKind, TenantMemo

NUMBERS: MemoKind[int] = MemoKind("numbers")
WORDS: MemoKind[str] = MemoKind("words")


def test_the_memo_keeps_the_latest_revision_of_its_most_recently_used_tenants():
    a, b, c = (TenantId(uuid.uuid4()) for _ in range(3))
    memo = TenantMemo(size=2)
    assert memo.get(NUMBERS, a) is None
    memo.put(NUMBERS, a, 1, 10)
    memo.put(NUMBERS, a, 3, 30)
    assert memo.get(NUMBERS, a) == (3, 30) and memo.get(WORDS, a) is None
    memo.put(NUMBERS, b, 1, 11)
    assert memo.get(NUMBERS, a) == (3, 30)  # a used last: b goes first
    memo.put(NUMBERS, c, 1, 12)
    assert len(memo) == 2
    assert memo.get(NUMBERS, b) is None
    assert memo.get(NUMBERS, a) == (3, 30) and memo.get(NUMBERS, c) == (1, 12)
