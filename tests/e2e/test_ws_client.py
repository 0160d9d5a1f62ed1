"""The client helper: refetch on a gap, resume after a dropped connection."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import pytest

from client.stream import StreamClient, StreamRefused
from tests.e2e.ws_support import FIRST, append_notes, revoke_key, serve, ws_settings
from tests.support.wait import until


class Collector:
    def __init__(self) -> None:
        self.events: list[dict[str, Any]] = []
        self.gaps: list[tuple[str, int]] = []

    async def on_event(self, room: str, message: dict[str, Any]) -> None:
        self.events.append(message)

    async def on_gap(self, room: str, head_seq: int) -> None:
        self.gaps.append((room, head_seq))

    async def arrived(self, count: int, timeout: float = 10) -> None:
        await until(lambda: len(self.events) >= count, timeout=timeout, interval=0.01,
                    what=lambda: f"{count} events (got {len(self.events)})")


async def test_gap_calls_refetch_then_resumes_from_head(db, make_tenant, store) -> None:
    t = await make_tenant("Acme")
    ticket = uuid.uuid4()
    await append_notes(store, t.tenant_id, ticket, 9, per_tx=9)
    got = Collector()
    async with serve(ws_settings(db.runtime_url, ws_replay_window=3)) as srv:
        client = StreamClient(srv.url, t.admin_key.secret, rooms={"tenant": 0},
                              on_event=got.on_event, on_gap=got.on_gap, header_auth=False)
        runner = asyncio.create_task(client.run())
        await client.wait_subscribed("tenant")
        assert got.gaps == [("tenant", FIRST + 10)] and got.events == []
        live = await append_notes(store, t.tenant_id, ticket, 2)
        await got.arrived(2)
        assert [m["seq"] for m in got.events] == live == [FIRST + 11, FIRST + 12]

        # A dropped connection: the client resubscribes from seq 12 and misses nothing.
        await client.drop_connection()
        missed = await append_notes(store, t.tenant_id, ticket, 3)
        await got.arrived(5)
        await client.wait_subscribed("tenant")
        more = await append_notes(store, t.tenant_id, ticket, 1)
        await got.arrived(6)
        assert [m["seq"] for m in got.events] == live + missed + more
        assert client.connects == 2 and client.gaps == 1

        await revoke_key(db.admin_url, t.tenant_id, t.admin_key.id)
        await client.drop_connection()
        with pytest.raises(StreamRefused) as refused:
            await asyncio.wait_for(runner, 10)
        assert refused.value.code == 4401


async def test_a_gap_resumes_from_changes_without_a_refetch(db, make_tenant, store) -> None:
    t = await make_tenant("Acme")
    ticket = uuid.uuid4()
    got = Collector()
    async with serve(ws_settings(db.runtime_url, ws_replay_window=3)) as srv:
        changes_url = srv.url.replace("ws://", "http://").replace("/v1/stream", "/v1/changes")
        client = StreamClient(srv.url, t.admin_key.secret, rooms={"tenant": 0},
                              on_event=got.on_event, on_gap=got.on_gap,
                              changes_url=changes_url, changes_page=4,
                              # Slow to reconnect: the 9 notes below commit while it is
                              # away, so it comes back behind by more than the window.
                              min_backoff=3.0)
        runner = asyncio.create_task(client.run())
        try:
            await client.wait_subscribed("tenant")
            # Behind by more than the replay window: the server answers with a gap, and
            # the client pages /v1/changes from where it was instead.
            await client.drop_connection()
            missed = await append_notes(store, t.tenant_id, ticket, 9, per_tx=9)
            await got.arrived(FIRST + 10)
            await client.wait_subscribed("tenant")
            live = await append_notes(store, t.tenant_id, ticket, 2)
            await got.arrived(FIRST + 12)
            seqs = [m["seq"] for m in got.events]
            assert seqs == list(range(1, FIRST + 13))  # every event once, in order
            assert seqs[-len(missed + live):] == missed + live
            assert got.gaps == [] and client.resumed == 1
            notes = [m for m in got.events if m["seq"] in missed]
            assert all(m["type"] == "event" and m["room"] == "tenant"
                       and m["event"]["stream_id"] == str(ticket) for m in notes)
        finally:
            await client.close()
            await asyncio.wait_for(runner, 10)
