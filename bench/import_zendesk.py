"""Tickets with 5 comments each imported per second (``helpdesk import zendesk``), against
the append path alone in the same run.

The export is the tests' generated one (tests/support/zendesk.py) with ``--tickets``
tickets of exactly five comments each (every seventh comment with a file). A round
imports it into a fresh tenant through ``handlers.zendesk_import.import_zendesk``, as
the command does; the baseline then appends the very events that import wrote, each
ticket's in one unit of work of its own (``store.unit_of_work`` and ``append``, under the
importer's actor), into another fresh tenant: what the import costs on top of writing
its events. The two take turns for ``--rounds`` rounds; medians are reported.

    python -m bench.import_zendesk [--tickets 100] [--rounds 3]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
import uuid
from pathlib import Path

from bench.common import bench_server, fresh_database, report
from eventstore.keys import Keyring
from eventstore.pool import create_pool
from eventstore.store import EventStore
from eventstore.types import NewEvent
from handlers.tenants import create_tenant_as_operator
from handlers.zendesk_import import import_zendesk
from handlers.zendesk_records import ACTOR
from tests.support.files import storages
from tests.support.zendesk import write_export


async def run(tickets: int, rounds: int) -> None:
    with bench_server() as server, tempfile.TemporaryDirectory() as tmp:
        export = write_export(Path(tmp) / "export", tickets=tickets, per_ticket=5)
        async with fresh_database(server) as db:
            pool = await create_pool(db.runtime_url, min_size=1, max_size=4)
            try:
                secret = await pool.fetchval(
                    "SELECT value FROM instance_secrets WHERE name = 'data_key'")
                store = EventStore(pool, keyring=Keyring(bytes(secret)))
                imports: list[float] = []
                appends: list[float] = []
                for n in range(rounds):
                    tenant = (await create_tenant_as_operator(db.admin_url, f"I{n}")).tenant_id
                    start = time.perf_counter()
                    done = await import_zendesk(store, storages(store), tenant,
                                                export.directory)
                    imports.append(done.created["ticket"] / (time.perf_counter() - start))
                    async with store.unit_of_work(tenant, readonly=True) as uow:
                        rows = await uow.conn.fetch(
                            "SELECT stream_id, type, schema_version, data, metadata FROM events "
                            "WHERE actor_kind = 'import' AND stream_id IN (SELECT id FROM "
                            "tickets) ORDER BY seq")
                    streams: dict[uuid.UUID, list[NewEvent]] = {}
                    for r in rows:
                        streams.setdefault(r["stream_id"], []).append(NewEvent(
                            r["type"], dict(r["data"]), r["schema_version"],
                            dict(r["metadata"])))
                    other = (await create_tenant_as_operator(db.admin_url, f"A{n}")).tenant_id
                    start = time.perf_counter()
                    for events in streams.values():
                        async with store.unit_of_work(other, ACTOR) as uow:
                            await uow.append(uuid.uuid4(), 0, events)
                    appends.append(len(streams) / (time.perf_counter() - start))
                    print(f"round {n + 1}: import {imports[-1]:.1f} tickets/s, "
                          f"append alone {appends[-1]:.1f} tickets/s", flush=True)
            finally:
                await pool.close()
    value, baseline = statistics.median(imports), statistics.median(appends)
    report("import_zendesk", [{
        "figure": f"tickets (5 comments) imported/s, {tickets} tickets",
        "value": round(value, 1), "baseline": round(baseline, 1),
        "ratio": round(value / baseline, 2), "target": ">= 0.3"}])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--tickets", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    asyncio.run(run(args.tickets, args.rounds))


if __name__ == "__main__":
    main()
