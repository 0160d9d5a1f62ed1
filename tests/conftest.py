"""Fixtures shared by every test: a real Postgres, cloned per test from a template."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from datetime import datetime

import asyncpg
import pytest

from eventstore.keys import Keyring
from eventstore.pool import create_pool
from eventstore.store import EventStore
from handlers.tenants import NewTenant, create_tenant_as_operator
from tests.support.dovecot import DovecotServer
from tests.support.pg import Databases, TestDatabase, server_url
from tests.support.redis import RedisServer
from tests.support.smtp import SmtpServer


@pytest.fixture(scope="session")
def pg_server() -> Iterator[str]:
    with server_url() as url:
        yield url


@pytest.fixture(scope="session")
async def databases(pg_server: str) -> AsyncIterator[Databases]:
    dbs = Databases(pg_server)
    await dbs.create_template()
    yield dbs
    await dbs.drop(dbs.template)


@pytest.fixture
async def db(databases: Databases) -> AsyncIterator[TestDatabase]:
    """A fresh migrated database for this test."""
    clone = await databases.clone()
    yield clone
    await databases.drop(clone.name)


@pytest.fixture
async def pool(db: TestDatabase) -> AsyncIterator[asyncpg.Pool]:
    """A pool connected as the runtime role (never a superuser)."""
    p = await create_pool(db.runtime_url, min_size=1, max_size=10)
    yield p
    await p.close()


@pytest.fixture
async def store(pool: asyncpg.Pool) -> EventStore:
    """The store as the product runs it: personal data sealed with per-contact keys,
    wrapped by the database's own key-encryption key (as an API process with no
    DATA_KEY), so it and the app of an HTTP test open each other's keys."""
    secret = await pool.fetchval("SELECT value FROM instance_secrets WHERE name = 'data_key'")
    return EventStore(pool, keyring=Keyring(bytes(secret)))


@pytest.fixture
def make_tenant(db: TestDatabase) -> Callable[..., Awaitable[NewTenant]]:
    """Create tenants the way the operator does (as the owner); ``at`` is when (its
    periodic jobs are due then), default now."""

    async def make(name: str = "Acme", at: datetime | None = None) -> NewTenant:
        return await create_tenant_as_operator(db.admin_url, name, at=at)

    return make


@pytest.fixture
def redis_server() -> Iterator[RedisServer]:
    """A real redis-server on a random port, owned (and killed) by the test."""
    server = RedisServer()
    server.start()
    try:
        yield server
    finally:
        server.kill()


@pytest.fixture(scope="session")
def smtp_server() -> Iterator[SmtpServer]:
    """One recording SMTP server for the whole session (tests/support/smtp.py)."""
    server = SmtpServer().start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def dovecot_server() -> Iterator[DovecotServer]:
    """One Dovecot IMAP server for the whole session (tests/support/dovecot.py)."""
    server = DovecotServer().start()
    try:
        yield server
    finally:
        server.stop()
