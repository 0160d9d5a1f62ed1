"""Test databases: one migrated template per run, one clone per test.

``TEST_DATABASE_URL`` (a superuser URL) picks the server; without it an embedded
Postgres is started for the run in a temporary directory.
"""

from __future__ import annotations

import asyncio
import os
import tempfile
import uuid
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import quote, urlsplit, urlunsplit

import asyncpg

from migrations.runner import migrate

if TYPE_CHECKING:
    from api.cli.embedded import EmbeddedUrls

RUNTIME_USER = "helpdesk_app"
RUNTIME_PASSWORD = "helpdesk-app-test"


def with_database(url: str, database: str, *, user: str | None = None,
                  password: str | None = None) -> str:
    """``url`` pointed at another database (and maybe another user)."""
    parts = urlsplit(url)
    netloc = parts.netloc
    if user is not None:
        host = netloc.rpartition("@")[2]
        netloc = quote(user) + (":" + quote(password) if password else "") + "@" + host
    return urlunsplit((parts.scheme, netloc, "/" + database, parts.query, parts.fragment))


@dataclass(frozen=True)
class TestDatabase:
    """A cloned, migrated database: ``admin_url`` is a superuser, ``runtime_url`` the
    non-superuser runtime role the service uses."""

    name: str
    admin_url: str
    runtime_url: str


@contextmanager
def server_url() -> Iterator[str]:
    """A superuser URL for the run: TEST_DATABASE_URL or a fresh embedded server, which
    is stopped before its temporary directory is deleted."""
    url = os.environ.get("TEST_DATABASE_URL")
    if url:
        yield url
        return
    from api.cli import embedded

    with tempfile.TemporaryDirectory(prefix="helpdesk-test-pg-") as tmp, \
            embedded.using(Path(tmp)) as urls:
        yield urls.owner_url


@asynccontextmanager
async def embedded_server(data_dir: Path) -> AsyncIterator[EmbeddedUrls]:
    """An embedded Postgres of the test's own in ``data_dir``, stopped when the block
    exits (started and stopped in a thread: both wait for the server)."""
    from api.cli import embedded

    held = embedded.using(data_dir)
    urls = await asyncio.to_thread(held.__enter__)
    try:
        yield urls
    finally:
        await asyncio.to_thread(held.__exit__, None, None, None)


class Databases:
    """Creates the template once and hands out clones."""

    def __init__(self, admin_url: str) -> None:
        self.admin_url = admin_url
        self.run_id = uuid.uuid4().hex[:10]
        self.template = f"hd_tmpl_{self.run_id}"

    async def _admin(self) -> asyncpg.Connection:
        return await asyncpg.connect(self.admin_url, timeout=10)

    async def create_template(self) -> None:
        conn = await self._admin()
        try:
            await conn.execute(f'CREATE DATABASE "{self.template}"')
        finally:
            await conn.close()
        await migrate(with_database(self.admin_url, self.template),
                      runtime_user=RUNTIME_USER, runtime_password=RUNTIME_PASSWORD)

    async def clone(self) -> TestDatabase:
        name = f"hd_t_{self.run_id}_{uuid.uuid4().hex[:8]}"
        conn = await self._admin()
        try:
            await conn.execute(f'CREATE DATABASE "{name}" TEMPLATE "{self.template}"')
            # A test database need not survive a crash of the server (the tests that
            # kill Postgres run servers of their own): commits skip the wait for the
            # WAL flush, the one cost here that is the disk's and not the code's.
            # Transactions that ask for synchronous_commit themselves still get it.
            await conn.execute(f'ALTER DATABASE "{name}" SET synchronous_commit = off')
        finally:
            await conn.close()
        return TestDatabase(
            name=name,
            admin_url=with_database(self.admin_url, name),
            runtime_url=with_database(self.admin_url, name, user=RUNTIME_USER,
                                      password=RUNTIME_PASSWORD),
        )

    async def drop(self, name: str) -> None:
        conn = await self._admin()
        try:
            await conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        finally:
            await conn.close()


async def event_chain(url: str, tenant_id: object) -> list[tuple[int, bytes]]:
    """A tenant's events as (seq, hash), in order, read on ``url`` (a moved tenant's
    chain is compared on both sides with it)."""
    conn = await asyncpg.connect(url)
    try:
        async with conn.transaction():
            await conn.execute("SELECT set_config('app.tenant_id', $1, true)", str(tenant_id))
            rows = await conn.fetch("SELECT seq, hash FROM events WHERE tenant_id = $1 "
                                    "ORDER BY seq", tenant_id)
    finally:
        await conn.close()
    return [(r["seq"], bytes(r["hash"])) for r in rows]
