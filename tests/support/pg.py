"""Test databases: one migrated template per run, one clone per test.

``TEST_DATABASE_URL`` (a superuser URL) picks the server; without it an embedded
Postgres is started for the run in a temporary directory.
"""

from __future__ import annotations

import os
import tempfile
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from urllib.parse import quote, urlsplit, urlunsplit

import asyncpg

from migrations.runner import migrate

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
    """A superuser URL for the run: TEST_DATABASE_URL or a fresh embedded server."""
    url = os.environ.get("TEST_DATABASE_URL")
    if url:
        yield url
        return
    from api.cli import embedded

    with tempfile.TemporaryDirectory(prefix="helpdesk-test-pg-") as tmp:
        urls = embedded.start(__import__("pathlib").Path(tmp), cleanup="delete")
        yield urls.owner_url


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
