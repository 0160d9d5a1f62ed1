"""Round trips to the database per ticket command, counted at the driver.

Every message the driver sends and waits on for an answer is one round trip: a
statement with parameters (its execution; statements are prepared once per
connection, so the first command warms them and is not counted) and a simple query
(BEGIN with its arming, COMMIT with its staged statements). The commit notice
(eventstore/notifier.py), sent after the unit of work on the way out, is counted
too. The bounds are the write path's design (docs/performance.md).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import asyncpg
import pytest

from tests.e2e.conftest import NEW_TICKET, auth


class Trips:
    def __init__(self) -> None:
        self.count = 0
        self.queries: list[str] = []


@contextmanager
def counted(monkeypatch: pytest.MonkeyPatch) -> Iterator[Trips]:
    trips = Trips()
    execute = asyncpg.Connection.execute
    do_execute = asyncpg.Connection._do_execute

    async def counted_execute(self: Any, query: str, *args: Any, **kw: Any) -> Any:
        if not args:
            trips.count += 1  # a simple query; with arguments, _do_execute counts it
            trips.queries.append(query[:70])
        return await execute(self, query, *args, **kw)

    async def counted_do_execute(self: Any, *args: Any, **kw: Any) -> Any:
        trips.count += 1
        trips.queries.append(str(args[0])[:70])
        return await do_execute(self, *args, **kw)

    with monkeypatch.context() as m:
        m.setattr(asyncpg.Connection, "execute", counted_execute)
        m.setattr(asyncpg.Connection, "_do_execute", counted_do_execute)
        yield trips


# The write path's round trips per command (docs/performance.md).
# Counted before commands deferred their writes: 18, 22, 13 and 21.
BOUNDS = {"create, known e-mail": 5, "create, new e-mail": 6, "message": 4,
          "create with Idempotency-Key": 7}


async def test_round_trips_per_command(http, tenant, monkeypatch):
    admin = tenant.admin_key
    # Warm every statement of every case once (prepared per connection), on the one
    # connection the test app's pool hands out again and again.
    warm = (await http.post("/v1/tickets", json=NEW_TICKET, headers=auth(admin))).json()
    await http.post("/v1/tickets", json=NEW_TICKET | {"requester": {"email": "w@x.example"}},
                    headers=auth(admin, **{"Idempotency-Key": "warm"}))
    await http.post(f"/v1/tickets/{warm['id']}/messages", json={"body": "warm"},
                    headers=auth(admin))

    async def create() -> Any:
        return await http.post("/v1/tickets", json=NEW_TICKET, headers=auth(admin))

    async def create_new() -> Any:
        email = f"{uuid.uuid4().hex}@new.example"
        return await http.post("/v1/tickets", json=NEW_TICKET | {"requester": {"email": email}},
                               headers=auth(admin))

    async def message() -> Any:
        return await http.post(f"/v1/tickets/{warm['id']}/messages", json={"body": "On it."},
                               headers=auth(admin))

    async def keyed() -> Any:
        return await http.post("/v1/tickets", json=NEW_TICKET,
                               headers=auth(admin, **{"Idempotency-Key": uuid.uuid4().hex}))

    found: dict[str, int] = {}
    sent: dict[str, list[str]] = {}
    for case, send in (("create, known e-mail", create), ("create, new e-mail", create_new),
                       ("message", message), ("create with Idempotency-Key", keyed)):
        await send()  # warm this case's statements
        with counted(monkeypatch) as trips:
            response = await send()
        assert response.status_code == 201, response.text
        found[case] = trips.count
        sent[case] = [" ".join(q.split()) for q in trips.queries]
    print("round trips per command:", found)
    assert all(found[case] <= bound for case, bound in BOUNDS.items()), sent
