"""What the mail tests share: the corpus, a mailbox made over HTTP, mail posted to its
inbound route, rows read as the owner, and a scheduler running the mail jobs."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import asyncpg
import httpx

from api.root import Services, file_storages
from domain.clock import ManualClock
from eventstore.store import EventStore
from handlers import mail_idle, mail_notify, mail_out, mail_poll, sla_check
from scheduler.loop import LoopConfig, Scheduler
from scheduler.registry import Registry
from tests.support.wait import until

CORPUS = Path(__file__).parent.parent / "mail"


def corpus(name: str, **values: str) -> bytes:
    """A message of tests/mail/, its ``{NAME}`` placeholders filled."""
    raw = (CORPUS / name).read_bytes()
    for key, value in values.items():
        raw = raw.replace(b"{" + key.encode() + b"}", value.encode())
    return raw


def soon() -> datetime:
    """Jobs are due by the database's clock; the tests' schedulers start a little after."""
    return datetime.now(UTC) + timedelta(seconds=5)


async def make_mailbox(http: httpx.AsyncClient, admin: dict[str, str], **parts: Any
                       ) -> dict[str, Any]:
    """``support@acme.test`` with ``parts`` (``smtp``, ``imap``) as given."""
    r = await http.post("/v1/mailboxes", headers=admin, json={
        "address": "support@acme.test", "name": "Acme support", **parts})
    assert r.status_code == 201, r.text
    return dict(r.json())


def smtp_at(port: int) -> dict[str, Any]:
    return {"host": "127.0.0.1", "port": port, "security": "none", "username": None,
            "password": "not-shown"}


async def inbound(http: httpx.AsyncClient, box: dict[str, Any], raw: bytes) -> dict[str, Any]:
    r = await http.post(box["inbound_url"], content=raw, headers={
        "Authorization": f"Bearer {box['inbound_secret']}", "Content-Type": "message/rfc822"})
    assert r.status_code == 200, r.text
    return dict(r.json())


async def owner_fetch(db: Any, sql: str, *args: Any) -> list[asyncpg.Record]:
    """Rows read as the owner (past row-level security), for what the API does not show."""
    conn = await asyncpg.connect(db.admin_url)
    try:
        return list(await conn.fetch(sql, *args))
    finally:
        await conn.close()


PUBLIC_URL = "https://desk.example.com"


async def run_mail_jobs(services: Services, clock: ManualClock,
                        done: Callable[[], Awaitable[bool]], *, sla: bool = False,
                        idle: bool = False, store: EventStore | None = None) -> None:
    """A scheduler running the mail job kinds only (and ``sla.check``, with ``sla``;
    ``mail.idle``, with ``idle``), until ``done``; on the app's store, or ``store`` (a
    process with another key-encryption key)."""
    registry = Registry()
    storages = lambda store: file_storages(services.settings, store)  # noqa: E731
    mail_out.register(registry, storages, timeout=2.0, max_attempts=3)
    mail_notify.register(registry, public_url=PUBLIC_URL, timeout=2.0, max_attempts=3)
    if sla:
        sla_check.register(registry)
    mail_poll.register(registry, storages, timeout=5.0)
    if idle:
        mail_idle.register(registry, tenants=1, timeout=5.0)
    loop = Scheduler(store or services.store, clock, registry,
                     config=LoopConfig(concurrency=2, poll_interval=0.05,
                                       retry_base_seconds=60, retry_cap_seconds=60))
    task = asyncio.create_task(loop.run())
    try:
        await until(done, timeout=15)
    finally:
        await loop.stop()
        await task
