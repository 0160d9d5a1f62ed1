"""Readiness checks: one per part of the process, each saying how that part is.

Only a check that says it is critical and failing makes readiness fail (Postgres
down; a scheduler that runs here and stalled). Optional parts (Redis, the read
replica) report ``degraded``, ``lagging`` or ``dormant`` and never fail readiness;
so do data keys this process met and could not unwrap (``data_keys``: its
``DATA_KEY`` is not the one that wrapped them; only reads of sealed data fail), and
a file storage directory that is not usable (``file_storage``: only files need it),
and mail (``mail``: ``dormant`` without a mailbox, ``degraded`` while a mailbox's last
use of its server failed), and Slack alike (``slack``: ``dormant`` while no tenant has
connected it, ``degraded`` while a connection's last post failed).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from api.ops.readiness import CheckResult
from eventstore.blobs import directory_usable
from handlers.mailboxes import mail_health
from handlers.slack import slack_health

if TYPE_CHECKING:
    from api.root import Services


HealthCheck = Callable[["Services"], Awaitable[CheckResult]]


async def check_database(services: Services) -> CheckResult:
    try:
        async with asyncio.timeout(2.0):
            async with services.pool.acquire() as conn:
                await conn.fetchval("SELECT 1")
    except Exception as exc:  # any failure here means "not ready", whatever its type
        return CheckResult("unavailable", True, f"{type(exc).__name__}: {exc}"[:200])
    return CheckResult("ok")


async def check_redis(services: Services) -> CheckResult:
    return await services.redis.check()


async def check_replica(services: Services) -> CheckResult:
    """``ok | lagging | degraded | dormant`` (no ``READ_DATABASE_URL``), measured now;
    never critical: whatever it says, its readers are answered from the primary."""
    replica = services.reads.replica
    if replica is None:
        return CheckResult("dormant")
    try:
        async with asyncio.timeout(2.0):
            status = await replica.probe()
    except TimeoutError:
        replica.failed(TimeoutError("no answer within 2 s"))
        status = replica.status
    detail = status.detail
    if detail is None and status.delay_seconds is not None:
        detail = f"{status.delay_seconds:.3f} s behind"
    return CheckResult(status.state, detail=detail)


async def check_scheduler(services: Services) -> CheckResult:
    """``ok | stalled | disabled``; stalled is critical only where the loop runs."""
    if services.scheduler is None:
        return CheckResult("disabled")
    status = services.scheduler.scheduler.status()
    return CheckResult(status, critical_failure=status != "ok")


async def check_data_keys(services: Services) -> CheckResult:
    """``ok | degraded | disabled``: degraded once this process met a data key its
    key-encryption key does not unwrap (a rotation rolled out without it, say); the
    start-up check refused the keys in the database that it knew of then."""
    keyring = services.store.keyring
    if keyring is None:
        return CheckResult("disabled")
    if keyring.mismatch is not None:
        return CheckResult("degraded", detail=keyring.mismatch[:200])
    return CheckResult("ok", detail=f"DATA_KEY {keyring.fingerprint}")


async def check_file_storage(services: Services) -> CheckResult:
    """``ok | degraded | dormant``: dormant without ``FILE_STORAGE_DIR`` (files are
    kept in Postgres, which the database check covers); degraded while the directory
    is missing or full, which only uploads and downloads need."""
    root = services.settings.file_storage_dir
    if root is None:
        return CheckResult("dormant")
    if not await asyncio.to_thread(directory_usable, root):
        return CheckResult("degraded", detail=f"file storage directory {root} is not usable")
    return CheckResult("ok")


async def _integration(services: Services, health: Callable[[Any], Awaitable[tuple[int, int]]],
                       failed: str) -> CheckResult:
    """``ok | degraded | dormant`` of an integration that is not the process's to keep
    up, so never failing readiness: dormant with no connection, degraded naming how many
    (``failed``: "{failing} of {count} ...") failed on their last use."""
    try:
        async with asyncio.timeout(2.0):
            async with services.pool.acquire() as conn:
                count, failing = await health(conn)
    except Exception as exc:  # the database check reports the database itself
        return CheckResult("degraded", detail=f"{type(exc).__name__}: {exc}"[:200])
    if count == 0:
        return CheckResult("dormant")
    if failing:
        return CheckResult("degraded", detail=failed.format(failing=failing, count=count))
    return CheckResult("ok")


async def check_mail(services: Services) -> CheckResult:
    """Mail: degraded names how many mailboxes' last delivery failed."""
    return await _integration(services, mail_health, "{failing} of {count} mailboxes "
                              "failed on their last use of their server")


async def check_slack(services: Services) -> CheckResult:
    """Slack: degraded names how many connections' last post failed."""
    return await _integration(services, slack_health, "{failing} of {count} Slack "
                              "connections failed on their last post")


CHECKS: dict[str, HealthCheck] = {
    "database": check_database,
    "redis": check_redis,
    "replica": check_replica,
    "scheduler": check_scheduler,
    "data_keys": check_data_keys,
    "file_storage": check_file_storage,
    "mail": check_mail,
    "slack": check_slack,
}
"""Every readiness check, by the name readiness reports it under."""
