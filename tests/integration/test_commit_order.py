"""Readers never skip an event that commits later, when the appenders are different
OS processes and one of them commits late.

Another process takes the tenant head (an append, as a unit of work's COMMIT message
would send it) and keeps its transaction open; this process then appends as a command
does. The head lock makes this process's commit wait for the other's, so seqs commit
in order, and a reader tailing ``seq > last`` meanwhile sees nothing it could skip.
"""

from __future__ import annotations

import asyncio
import sys
import uuid
from pathlib import Path

import pytest

from eventstore.literal import append_call
from eventstore.store import EventStore
from eventstore.types import NewEvent, StoreActor

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.slow  # it starts a process of its own

LATE = """
import asyncio, sys
import asyncpg

async def main() -> None:
    conn = await asyncpg.connect(sys.argv[1])
    await conn.execute(sys.argv[2])  # BEGIN, arm, append: the tenant head is ours
    print("holding", flush=True)
    await asyncio.get_running_loop().run_in_executor(None, sys.stdin.readline)
    await conn.execute("COMMIT")
    await conn.close()

asyncio.run(main())
"""


async def test_a_late_commit_in_another_process_is_never_skipped(db, store: EventStore,
                                                                  make_tenant):
    t = (await make_tenant()).tenant_id
    async with store.unit_of_work(t, readonly=True) as s:
        last = (await s.head())[0]
    late_stream, our_stream = uuid.uuid4(), uuid.uuid4()
    begin = (f"BEGIN; SELECT set_config('app.tenant_id', '{t}', true), "
             "set_config('app.actor_kind', 'api_key', true), "
             "set_config('app.actor_id', 'late', true); "
             + append_call(t, late_stream, 0, [NewEvent("Late", {"n": 1})]))
    other = await asyncio.create_subprocess_exec(
        sys.executable, "-c", LATE, db.runtime_url, begin, cwd=ROOT,
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE)
    assert other.stdin is not None and other.stdout is not None
    try:
        assert (await asyncio.wait_for(other.stdout.readline(), 30)).strip() == b"holding"

        async def ours() -> None:
            async with store.unit_of_work(t, StoreActor("api_key", "ours")) as s:
                await s.append(our_stream, 0, [NewEvent("Ours", {"n": 2})])

        appending = asyncio.create_task(ours())
        # Our commit waits on the other process's head lock: nothing is readable yet.
        done, _ = await asyncio.wait({appending}, timeout=0.5)
        assert not done, "a later append committed ahead of an earlier one"
        async with store.unit_of_work(t, readonly=True) as s:
            assert await s.read_tenant(last, 10) == []
            # The changes feed neither shows anything nor moves its cursor past the
            # committed head, with a filter or without.
            for types in (None, ["Ours"]):
                page = await s.read_changes(last, 10, window=100, types=types)
                assert (page.events, page.next_after_seq, page.head_seq) == ([], last, last)
        other.stdin.write(b"commit\n")
        await other.stdin.drain()
        assert await asyncio.wait_for(other.wait(), 30) == 0
        await asyncio.wait_for(appending, 30)
    finally:
        if other.returncode is None:
            other.kill()
            await other.wait()
    async with store.unit_of_work(t, readonly=True) as s:
        after = await s.read_tenant(last, 10)
        chain = await s.verify_chain()
        filtered = await s.read_changes(last, 10, window=100, types=["Ours"])
    assert [(e.type, e.seq) for e in after] == [("Late", last + 1), ("Ours", last + 2)]
    assert [r["seq"] for r in filtered.events] == [last + 2]
    assert filtered.next_after_seq == filtered.head_seq == last + 2
    assert chain.ok
