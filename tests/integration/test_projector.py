"""The projector under concurrency, crashes and rebuilds: rows never depend on how the
work was split, interrupted or redone."""

from __future__ import annotations

import asyncio
import itertools
import os
import random
import signal
import subprocess
import sys
import uuid
from collections import defaultdict
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from domain.clock import ManualClock
from projections import admin
from projections import analytics_reads as reads
from projections.projector import Batch, Projector
from tests.support.desk import Desk, random_traffic
from tests.support.readmodels import checkpoints, dump, refold_alone
from tests.support.wait import until

ROOT = Path(__file__).parents[2]
AGENTS = tuple(uuid.UUID(int=i) for i in range(1, 5))
START = datetime(2026, 6, 1, 8, tzinfo=UTC)


async def traffic(store: Any, tenant_id: Any, seed: int, commands: int) -> None:
    desk = Desk(store, tenant_id, ManualClock(START))
    await random_traffic(desk, random.Random(seed), commands, AGENTS)


async def cli(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    """``helpdesk projections ARGS`` in its own process."""
    return await asyncio.to_thread(
        subprocess.run, [sys.executable, "-m", "api.cli.main", "projections", *args], cwd=ROOT,
        env=env, capture_output=True, text=True, timeout=120, check=False)


async def test_two_workers_with_concurrent_writers_equal_one_worker_alone(
    pool: Any, store: Any, make_tenant: Any, db: Any
) -> None:
    tenants = [(await make_tenant(f"T{i}")).tenant_id for i in range(10)]
    committed: dict[int, list[Batch]] = defaultdict(list)

    def recorder(worker: int) -> Any:
        async def hook(batch: Batch) -> None:
            committed[worker].append(batch)
        return hook

    workers = [Projector(pool, batch_size=16, poll_interval=0.05, concurrency=2,
                         listen_dsn=db.runtime_url, after_commit=recorder(i)) for i in range(2)]
    for w in workers:
        await w.start()
    try:
        await asyncio.gather(*(traffic(store, t, seed, 40) for seed, t in enumerate(tenants)))
        cps: dict[Any, tuple[int, int]] = {}

        async def at_every_head() -> bool:
            cps.update(await checkpoints(db.admin_url))
            return all(last == head for last, head in cps.values())

        await until(at_every_head, timeout=60, interval=0.05,
                    what=lambda: f"the projectors to catch up (checkpoint, head): {cps}")
    finally:
        for w in workers:
            await w.stop()
    concurrent = await dump(db.admin_url)
    assert concurrent["analytics_tickets"], "the traffic opened tickets"
    assert committed[0] and committed[1], "both workers took part"

    # Exactly once: the committed batches of both workers tile 0..head with no overlap.
    by_tenant: dict[Any, list[tuple[int, int]]] = defaultdict(list)
    for batches in committed.values():
        for b in batches:
            by_tenant[b.tenant_id].append((b.from_seq, b.to_seq))
    for tenant, (_, head) in cps.items():
        ranges = sorted(by_tenant[tenant])
        assert ranges[0][0] == 0 and ranges[-1][1] == head
        assert all(a[1] == b[0] for a, b in itertools.pairwise(ranges)), ranges

    await refold_alone(pool, tenants, batch_size=1)
    assert await dump(db.admin_url) == concurrent


@pytest.mark.slow  # a projector child process
async def test_a_worker_killed_mid_batch_double_counts_nothing(
    pool: Any, store: Any, make_tenant: Any, db: Any
) -> None:
    tenant = (await make_tenant("Killed")).tenant_id
    await traffic(store, tenant, 7, 60)
    child = await asyncio.to_thread(
        subprocess.Popen,
        [sys.executable, "-m", "tests.support.projector_child", db.runtime_url, "3", "5"],
        cwd=ROOT, stdout=subprocess.PIPE, text=True,
    )
    try:
        assert child.stdout is not None
        line = await asyncio.to_thread(child.stdout.readline)
        assert line.startswith("IN_BATCH"), line
        _, from_seq, to_seq = line.split()
        # The child holds the checkpoint row: another worker skips it, it does not wait.
        assert await Projector(pool).run_once() is None
        os.kill(child.pid, signal.SIGKILL)
        await asyncio.to_thread(child.wait, 10)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
        if child.stdout is not None:
            child.stdout.close()
    last, head = (await checkpoints(db.admin_url))[tenant]
    assert last == int(from_seq) == 10 and int(to_seq) == 15 and head > 15

    await Projector(pool, batch_size=5).drain()
    resumed = await dump(db.admin_url)
    await refold_alone(pool, [tenant], batch_size=500)
    assert await dump(db.admin_url) == resumed


@pytest.mark.slow  # runs `helpdesk projections` as a subprocess
async def test_rebuild_from_zero_equals_incremental_and_says_so_meanwhile(
    pool: Any, store: Any, make_tenant: Any, db: Any
) -> None:
    a, b = (await make_tenant("A")).tenant_id, (await make_tenant("B")).tenant_id
    projector = Projector(pool, batch_size=3)
    await projector.ensure_checkpoints()
    for seed in range(3):  # incremental: caught up between rounds of traffic
        await traffic(store, a, seed, 15)
        await traffic(store, b, seed + 10, 15)
        await projector.drain()
    incremental = await dump(db.admin_url)

    head = await admin.reset(projector, "analytics", a)
    during = await reads.backlog(store, a, START)
    assert during["rebuilding"] is True and during["as_of_seq"] == 0 and during["lag"] == head
    assert during["total"] == 0
    assert (await reads.backlog(store, b, START))["rebuilding"] is False
    # A read-ahead that does not start at the checkpoint is ignored, not applied.
    stale = await projector.read_ahead(a, 5)
    batch = await projector.run_once(tenant_id=a, prefetched=stale)
    assert batch is not None and (batch.from_seq, batch.to_seq) == (0, 3)

    env = {**os.environ, "DATABASE_URL": db.runtime_url}
    for extra in (["--tenant", str(a)], []):
        done = await cli(env, "rebuild", "analytics", *extra)
        assert done.returncode == 0, done.stderr
        assert await dump(db.admin_url) == incremental
    after = await reads.backlog(store, a, START)
    assert after["rebuilding"] is False and after["lag"] == 0

    status = await cli(env, "status")
    assert status.returncode == 0, status.stderr
    assert str(a) in status.stdout and str(b) in status.stdout

    unknown = await cli(env, "rebuild", "nope")
    assert unknown.returncode == 2 and "unknown projection" in unknown.stderr


async def test_the_api_runs_the_projector_when_run_scheduler_is_on(
    pool: Any, store: Any, make_tenant: Any, db: Any
) -> None:
    from api.app import create_app
    from api.config import ProcessSettings
    from tests.support.http import asgi_client

    settings = ProcessSettings(database_url=db.runtime_url, run_scheduler=True,
                               projector_poll_interval=5.0)
    clock = ManualClock(START)
    app = create_app(settings, clock=clock)
    async with asgi_client(app) as client:
        # A tenant created after the projector started: its first notification makes
        # its checkpoint and wakes the loop, well before the 5 s poll.
        tenant = await make_tenant("Live")
        auth = {"Authorization": f"Bearer {tenant.admin_key.secret}"}
        await traffic(store, tenant.tenant_id, 3, 10)

        async def caught_up() -> dict[str, Any] | None:
            body: dict[str, Any] = (
                await client.get("/v1/analytics/backlog", headers=auth)).json()
            return body if body["lag"] == 0 and body["as_of_seq"] > 0 else None

        # The deadline is part of the test: under the 5 s poll, so that only the
        # notification can have brought the projector up to date.
        body = await until(caught_up, timeout=4.0,
                           what="the API's projector to catch up before its poll")
    assert body["rebuilding"] is False


async def test_an_unreadable_event_holds_back_only_its_own_tenant(
    pool: Any, store: Any, make_tenant: Any, db: Any
) -> None:
    from domain.errors import ValidationFailed
    from eventstore.types import NewEvent, StoreActor

    bad, good = (await make_tenant("Bad")).tenant_id, (await make_tenant("Good")).tenant_id
    async with store.unit_of_work(bad, StoreActor("operator", "test")) as s:
        # Written past the mapper on purpose: a payload the mapper cannot read back.
        await s.append(uuid.uuid4(), 0, [NewEvent("TicketAssigned", {"assignee": 7})])
    projector = Projector(pool)
    await projector.ensure_checkpoints()
    await traffic(store, good, 1, 10)
    outcomes = []
    for _ in range(4):
        try:
            outcomes.append(await projector.run_once())
        except ValidationFailed:
            outcomes.append("failed")
    assert "failed" in outcomes
    cps = await checkpoints(db.admin_url)
    assert cps[bad][0] == 0 < cps[bad][1]
    assert cps[good][0] == cps[good][1] > 0
