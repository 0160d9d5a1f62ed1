"""Wiring the scheduler into a process: the loop, its handlers and its health check.

``helpdesk worker`` runs ``run_scheduler`` alone; the API process runs it through
``scheduler_hook`` when ``RUN_SCHEDULER=true``. Both at once, and any number of
workers, are safe: claims skip each other's locked rows.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from datetime import timedelta

from api.bootstrap import Services
from api.health import CheckResult
from api.metrics import Metrics, instrument_jobs
from scheduler import idempotency, purge, sla_check, sweep, tenant_seed, webhooks
from scheduler.loop import LoopConfig, Scheduler
from scheduler.registry import Registry

log = logging.getLogger("helpdesk.scheduler")

# Other parts add their job kinds here: ``def register(registry, services)``.
Registrar = Callable[[Registry, Services], None]


def build_registry(services: Services, extra: list[Registrar] | None = None) -> Registry:
    """Every job kind this process handles."""
    s = services.settings
    registry = Registry()
    purge.register(registry, purge.PurgePolicy(
        done_retention=timedelta(hours=s.jobs_done_retention_hours),
        dead_retention=timedelta(days=s.jobs_dead_retention_days),
    ))
    webhooks.register(registry, timeout=s.webhook_timeout,
                      allow_private=s.webhook_allow_private_addresses)
    sla_check.register(registry)
    sweep.register(registry)
    idempotency.register(registry)
    tenant_seed.register(registry)
    for registrar in extra or []:
        registrar(registry, services)
    metrics = services.extras.get("metrics")
    if isinstance(metrics, Metrics):
        instrument_jobs(registry, metrics)
    return registry


def build_scheduler(services: Services, extra: list[Registrar] | None = None) -> Scheduler:
    """A scheduler loop over the process's pool, clock and settings."""
    s = services.settings
    config = LoopConfig(
        concurrency=s.scheduler_concurrency,
        poll_interval=s.scheduler_poll_interval,
        lease_seconds=s.scheduler_lease_seconds,
        grace_seconds=s.scheduler_grace_seconds,
    )
    return Scheduler(services.store, services.clock, build_registry(services, extra),
                     config=config,
                     listen_dsn=s.listen_database_url or s.database_url)


def register_health(services: Services, scheduler: Scheduler | None) -> None:
    """Readiness reports ``scheduler: ok | stalled | disabled``; stalled is critical only
    where the loop runs."""

    async def check(_services: Services) -> CheckResult:
        if scheduler is None:
            return CheckResult("disabled")
        status = scheduler.status()
        return CheckResult(status, critical_failure=status != "ok")

    services.extras.setdefault("health_checks", {})["scheduler"] = check


def start(services: Services, extra: list[Registrar] | None = None
          ) -> tuple[Scheduler, asyncio.Task[None]]:
    """Start the loop as a task of the running event loop."""
    scheduler = build_scheduler(services, extra)
    services.extras["scheduler"] = scheduler
    register_health(services, scheduler)
    return scheduler, asyncio.create_task(scheduler.run(), name="scheduler")


async def scheduler_hook(services: Services) -> Callable[[], Awaitable[None]] | None:
    """Startup hook of the API process: run the loop when RUN_SCHEDULER is on."""
    if not services.settings.run_scheduler:
        register_health(services, None)
        return None
    scheduler, task = start(services)
    log.info("scheduler running in the API process as %s", scheduler.worker_id)

    async def stop() -> None:
        await scheduler.stop()
        await task

    return stop
