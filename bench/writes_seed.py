"""The helpdesk's side of bench/writes.py's data, made by the tree under test.

bench/writes.py runs this file's text with the tree's own interpreter in the tree
(``python -c``), so the database is migrated by that tree's migrations and the tickets
are opened by that tree's write path; it imports only what every tree has (the test
support's databases, tenants and ``seed_tickets``), nothing of bench/.

Arguments: a superuser URL, the size of the large tenant, how many small tenants.
Prints one JSON line: the database's URLs, each tenant's id and admin key, the main
tenant's tickets, and how long the large tenant took to seed.

Tickets are opened through the handlers in-process (``seed_tickets``: 500 per unit of
work), several units of work at once: HTTP would take minutes per 60,000 tickets, and
bulk-copied rows would skip the events, contacts and search rows a real opening leaves.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time

from handlers.tenants import create_tenant_as_operator
from tests.support.desk import seed_tickets
from tests.support.pg import Databases

MAIN_TICKETS, SMALL_TICKETS = 200, 1_000
WRITERS = 4  # concurrent units of work seeding one tenant


async def seeded(runtime_url: str, tenant_id: object, count: int) -> list[str]:
    """``count`` tickets opened by WRITERS concurrent seeders."""
    shares = [count // WRITERS + (i < count % WRITERS) for i in range(WRITERS)]
    parts = await asyncio.gather(*(seed_tickets(runtime_url, tenant_id, n)
                                   for n in shares if n))
    return [t for part in parts for t in part]


async def main(server_url: str, large: int, small: int) -> None:
    dbs = Databases(server_url)
    await dbs.create_template()
    db = await dbs.clone()

    async def tenant(name: str) -> dict[str, object]:
        made = await create_tenant_as_operator(db.admin_url, name)
        return {"id": str(made.tenant_id), "key": made.admin_key.secret}

    main_tenant = await tenant("bench")
    main_tenant["tickets"] = await seeded(db.runtime_url, main_tenant["id"], MAIN_TICKETS)
    smalls = [await tenant(f"small {i}") for i in range(small)]
    for s in smalls:
        await seeded(db.runtime_url, s["id"], SMALL_TICKETS)
    big = await tenant("large")
    began = time.perf_counter()
    await seeded(db.runtime_url, big["id"], large)
    print(json.dumps({"admin_url": db.admin_url, "runtime_url": db.runtime_url,
                      "main": main_tenant, "small": smalls, "large": big,
                      "large_seconds": round(time.perf_counter() - began, 1)}))


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3])))
