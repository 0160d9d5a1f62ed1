"""The composition root: the one place that builds a process's long-lived parts.

``running(settings, role)`` builds what a process role needs inside one
``AsyncExitStack`` and tears it down in reverse order when the block ends:

| part | serve | worker | cli |
|---|---|---|---|
| pool, event store (appends counted), clock, metrics | yes | yes | yes |
| Redis guard, rate limiter, analytics cache, cursor codec, key cache | yes | yes | yes |
| access tokens (signing key), password hasher | yes | yes | yes |
| replica pool and its delay probe (``READ_DATABASE_URL``) | yes | yes | yes |
| key cache invalidation (LISTEN helpdesk_keys) | yes | no | no |
| live-feed hub and presence board (LISTEN, each its own) | yes | no | no |
| scheduler loop and projector | with ``RUN_SCHEDULER`` | yes | no |

Reads that tolerate lag (analytics, audit, projection status) go through
``Services.reads``: the replica while it is fit, else the primary (eventstore/replica.py).
Everything else uses ``Services.store``, the primary.

The parts travel to routes through the lifespan state (``request.state.services``)
and to loops through their constructors; no module keeps one in a global. Logging
is configured once per process by ``configure_logging``, which every entry point
calls, so ``serve`` and ``worker`` log alike.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import time
from collections.abc import AsyncIterator, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from datetime import timedelta
from enum import StrEnum
from pathlib import Path

import asyncpg
import httpx

from api.config import ProcessSettings
from api.feed.hub import Hub
from api.feed.presence import PresenceBoard
from api.http.keycache import KeyCache
from api.http.pagination import CursorCodec
from api.http.tokens import AccessTokens
from api.ops.cache import AnalyticsCache
from api.ops.logging import configure
from api.ops.metrics import Metrics, instrument_jobs
from api.ops.ratelimit import Policy, RateLimiter
from api.ops.redis_guard import RedisGuard
from domain.clock import Clock, SystemClock
from domain.ids import TenantId
from eventstore.blobs import DirectoryStorage, PostgresStorage, Storage
from eventstore.errors import StoreUnavailable
from eventstore.keys import Keyring, WrongDataKey, kek_census, unknown_keks
from eventstore.pool import create_pool
from eventstore.replica import Reads, Replica, ReplicaRefused
from eventstore.sqlfile import load_queries
from eventstore.store import EventStore
from handlers import (
    mail_idle,
    mail_notify,
    mail_out,
    mail_poll,
    rule_timers,
    sla_check,
    sla_warnings,
    slack_out,
    sweep,
)
from handlers.attachments import Storages
from handlers.credentials import Passwords
from handlers.oidc_provider import Providers
from handlers.rule_engine import RuleEngine
from handlers.sessions import Lifetimes
from projections.projector import Projector
from scheduler import idempotency, purge, tenant_seed, uploads, webhooks
from scheduler.loop import LoopConfig, Scheduler
from scheduler.registry import Registry

Q = load_queries(Path(__file__).with_name("queries.sql"))
OIDC_TIMEOUT_SECONDS = 10.0
"""How long a request to an OpenID Connect provider may take."""
log = logging.getLogger("helpdesk")


# Tests add job kinds of their own: ``def register(registry)``.
Registrar = Callable[[Registry], None]


class ProcessRole(StrEnum):
    """What a process is for; decides which parts ``running`` builds."""

    SERVE = "serve"
    WORKER = "worker"
    CLI = "cli"


class UnsafeRole(Exception):
    """The runtime role would bypass row-level security, or the schema is missing."""


@dataclass(frozen=True, slots=True)
class SchedulerRun:
    """A scheduler loop running as a task of this process."""

    scheduler: Scheduler
    task: asyncio.Task[None]


@dataclass
class Services:
    """Everything a process's routes and loops share, one typed field per part."""

    settings: ProcessSettings
    pool: asyncpg.Pool
    store: EventStore
    clock: Clock
    metrics: Metrics
    redis: RedisGuard
    limiter: RateLimiter
    cache: AnalyticsCache
    cursors: CursorCodec
    keys: KeyCache
    tokens: AccessTokens
    portal_tokens: AccessTokens
    """Customers' portal access tokens: same secret, another purpose (neither kind is
    accepted as the other)."""
    widget_tokens: AccessTokens
    """Widget session tokens: same secret, another purpose again."""
    passwords: Passwords
    reads: Reads
    """Where reads that tolerate lag go; ``reads.replica`` is None without
    ``READ_DATABASE_URL``."""
    files: Storages
    """Where files are kept (``file_storages``)."""
    oidc: Providers
    """OpenID Connect providers' discovery documents and keys, cached per process."""
    hub: Hub | None = None
    presence: PresenceBoard | None = None
    """Who is viewing and typing on which ticket (a serving process's, beside the hub)."""
    scheduler: SchedulerRun | None = None
    projector: Projector | None = None
    role: ProcessRole = ProcessRole.SERVE


def configure_logging(settings: ProcessSettings) -> None:
    """The process's log format and level, the same for every entry point."""
    configure(settings.log_level, json=settings.log_json)


async def check_runtime_role(conn: asyncpg.Connection) -> None:
    """Refuse a role for which row-level security would silently not apply."""
    if not await conn.fetchval(Q["migrated"]):
        raise UnsafeRole("the database is not migrated: run `helpdesk migrate` first")
    row = await conn.fetchrow(Q["role_safety"])
    assert row is not None
    reasons = []
    if row["superuser"]:
        reasons.append("is a superuser")
    if row["bypassrls"]:
        reasons.append("has BYPASSRLS")
    if row["owner_member"] or row["owns"]:
        reasons.append("owns the tables (or is a member of helpdesk_owner)")
    if reasons:
        raise UnsafeRole(
            f"refusing to run as role {row['role']!r}: it {' and '.join(reasons)}, so "
            "row-level security would not isolate tenants. Point DATABASE_URL at the "
            "runtime role that `helpdesk migrate` creates."
        )


async def close_pool(pool: asyncpg.Pool, timeout: float = 10.0) -> None:
    """Close the pool; connections still held after ``timeout`` are cut, so a stuck
    task can never keep the process from exiting."""
    try:
        await asyncio.wait_for(pool.close(), timeout)
    except TimeoutError:
        log.warning("pool close timed out after %.0f s; terminating connections", timeout)
        pool.terminate()


async def load_cursor_codec(settings: ProcessSettings, store: EventStore) -> CursorCodec:
    """The cursor signing key: ``CURSOR_SECRET``, or the secret the migrations stored
    (one per database, so every process on it agrees without configuration)."""
    if settings.cursor_secret:
        return CursorCodec(hashlib.sha256(settings.cursor_secret.encode("utf-8")).digest())
    async with store.connection() as conn:
        stored = await conn.fetchval(Q["cursor_secret"])
    if stored is None:
        raise UnsafeRole("no cursor secret: set CURSOR_SECRET or run `helpdesk migrate`")
    return CursorCodec(bytes(stored))


async def load_access_tokens(settings: ProcessSettings, store: EventStore) -> AccessTokens:
    """The access-token signing key: ``ACCESS_TOKEN_SECRET``, or the secret the
    migrations stored (one per database, like the cursor secret)."""
    ttl = timedelta(minutes=settings.access_token_minutes)
    if settings.access_token_secret:
        return AccessTokens(settings.access_token_secret.encode("utf-8"), ttl)
    async with store.connection() as conn:
        stored = await conn.fetchval(Q["access_token_secret"])
    if stored is None:
        raise UnsafeRole("no access token secret: set ACCESS_TOKEN_SECRET or run "
                         "`helpdesk migrate`")
    return AccessTokens(bytes(stored), ttl)


async def load_keyring(settings: ProcessSettings, conn: asyncpg.Connection) -> Keyring:
    """The key-encryption key of personal data: ``DATA_KEY``, or the secret the
    migrations stored (one per database, like the cursor secret); with the previous
    key of a rotation (``DATA_KEY_PREVIOUS``, else the stored secret when ``DATA_KEY``
    replaces it). Refuses (``WrongDataKey``) when data keys in the database are wrapped
    by a key-encryption key it does not hold: every sealed field of theirs would fail."""
    stored = await conn.fetchval(Q["data_key_secret"])
    if settings.data_key:
        previous = (settings.data_key_previous.encode("utf-8") if settings.data_key_previous
                    else bytes(stored) if stored is not None else None)
        keyring = Keyring(settings.data_key.encode("utf-8"), previous)
    elif stored is None:
        raise UnsafeRole("no data key: set DATA_KEY or run `helpdesk migrate`")
    else:
        keyring = Keyring(bytes(stored))
    unknown = unknown_keks(keyring, await kek_census(conn))
    if unknown:
        held = ", ".join(f"{n} by {kek}" for kek, n in sorted(unknown.items()))
        raise WrongDataKey(
            f"DATA_KEY does not match the database: data keys are wrapped by another "
            f"key-encryption key ({held}; this process has "
            f"{', '.join(sorted(keyring.fingerprints))}); set DATA_KEY, and "
            "DATA_KEY_PREVIOUS during a rotation, to the keys that wrapped them")
    return keyring


def file_storages(settings: ProcessSettings, store: EventStore) -> Storages:
    """Where new files go (``FILE_STORAGE``) and every storage a file may be in:
    Postgres always, the directory when ``FILE_STORAGE_DIR`` is set."""
    by_kind: dict[str, Storage] = {"postgres": PostgresStorage(store)}
    if settings.file_storage_dir is not None:
        by_kind["filesystem"] = DirectoryStorage(settings.file_storage_dir)
    if settings.file_storage not in by_kind:
        raise UnsafeRole("FILE_STORAGE=filesystem needs FILE_STORAGE_DIR")
    return Storages(new=by_kind[settings.file_storage], by_kind=by_kind)


def session_lifetimes(settings: ProcessSettings) -> Lifetimes:
    """How long refresh tokens and sign-in sessions live."""
    return Lifetimes(refresh=timedelta(days=settings.refresh_token_days),
                     session=timedelta(days=settings.session_max_days))


def count_appends(store: EventStore, metrics: Metrics) -> None:
    """Count every committed append for /metrics."""

    def committed(_tenant_id: TenantId, events: int) -> None:
        metrics.appends.inc(events)

    store.on_committed = committed


def job_registry(settings: ProcessSettings, metrics: Metrics | None = None,
                 extra: list[Registrar] | None = None) -> Registry:
    """Every job kind a scheduler of this process handles."""
    registry = Registry()
    purge.register(registry, purge.PurgePolicy(
        done_retention=timedelta(hours=settings.jobs_done_retention_hours),
        dead_retention=timedelta(days=settings.jobs_dead_retention_days),
    ))
    webhooks.register(registry, timeout=settings.webhook_timeout,
                      allow_private=settings.webhook_allow_private_addresses,
                      max_attempts=settings.webhook_max_attempts)
    sla_check.register(registry)
    sweep.register(registry)
    rule_timers.register(registry)
    sla_warnings.register(registry)
    idempotency.register(registry)
    uploads.register(registry, settings.file_storage_dir)
    mail_out.register(registry, lambda store: file_storages(settings, store))
    mail_notify.register(registry, public_url=settings.public_url)
    mail_poll.register(registry, lambda store: file_storages(settings, store),
                       every=timedelta(seconds=settings.mail_poll_seconds))
    slack_out.register(registry, api_url=settings.slack_api_url,
                       timeout=settings.slack_timeout)
    mail_idle.register(registry, tenants=min(settings.mail_idle_tenants,
                                             settings.scheduler_concurrency - 1),
                       every=timedelta(seconds=settings.mail_poll_seconds))
    tenant_seed.register(registry)
    for registrar in extra or []:
        registrar(registry)
    if metrics is not None:
        instrument_jobs(registry, metrics)
    return registry


def build_scheduler(services: Services, extra: list[Registrar] | None = None) -> Scheduler:
    """A scheduler loop over the process's store, clock and settings."""
    s = services.settings
    config = LoopConfig(
        concurrency=s.scheduler_concurrency,
        poll_interval=s.scheduler_poll_interval,
        lease_seconds=s.scheduler_lease_seconds,
        grace_seconds=s.scheduler_grace_seconds,
    )
    return Scheduler(services.store, services.clock,
                     job_registry(s, services.metrics, extra), config=config,
                     listen_dsn=s.listen_database_url or s.database_url)


def _listen_dsn(settings: ProcessSettings) -> str:
    dsn = settings.listen_database_url or settings.database_url
    assert dsn is not None
    return dsn


@asynccontextmanager
async def running(
    settings: ProcessSettings,
    role: ProcessRole,
    *,
    clock: Clock | None = None,
    extra_jobs: list[Registrar] | None = None,
    breaker_clock: Callable[[], float] = time.monotonic,
) -> AsyncIterator[Services]:
    """Build the parts ``role`` needs, yield them, and tear them down in reverse.

    ``clock`` is the business clock (SLA due times, events' ``at``); ``breaker_clock``
    the monotonic clock of the Redis circuit breaker. Tests move both by hand.
    """
    if not settings.database_url:
        raise StoreUnavailable("DATABASE_URL is not set")
    async with AsyncExitStack() as stack:
        pool = await create_pool(
            settings.database_url,
            min_size=settings.db_pool_min,
            max_size=settings.db_pool_max,
            connect_timeout=settings.db_connect_timeout,
            command_timeout=settings.db_command_timeout,
            pgbouncer=settings.pgbouncer,
        )
        stack.push_async_callback(close_pool, pool)
        async with pool.acquire() as conn:
            await check_runtime_role(conn)
            keyring = await load_keyring(settings, conn)
        clock = clock or SystemClock()
        store = EventStore(pool, acquire_timeout=settings.db_acquire_timeout, keyring=keyring)
        metrics = Metrics()
        count_appends(store, metrics)
        redis = RedisGuard(
            settings.redis_url,
            socket_timeout=settings.redis_socket_timeout,
            connect_timeout=settings.redis_connect_timeout,
            failure_threshold=settings.redis_breaker_failures,
            cooldown=settings.redis_breaker_cooldown,
            now=breaker_clock,
        )
        stack.push_async_callback(redis.close)
        metrics.watch_redis(redis)
        tokens = await load_access_tokens(settings, store)
        # Only OpenID Connect sign-in uses it; it connects to nothing until then.
        oidc_client = httpx.AsyncClient(timeout=OIDC_TIMEOUT_SECONDS, follow_redirects=False)
        stack.push_async_callback(oidc_client.aclose)
        services = Services(
            settings=settings, pool=pool, store=store, clock=clock, metrics=metrics,
            redis=redis,
            limiter=RateLimiter(
                redis,
                per_key=Policy("key", settings.rate_limit_per_key, settings.rate_limit_window),
                per_address=Policy("address", settings.rate_limit_per_address,
                                   settings.rate_limit_window),
            ),
            cache=AnalyticsCache(redis, ttl=settings.cache_ttl, metrics=metrics),
            cursors=await load_cursor_codec(settings, store),
            tokens=tokens,
            portal_tokens=tokens.for_purpose(
                "portal token", timedelta(minutes=settings.access_token_minutes)),
            widget_tokens=tokens.for_purpose(
                "widget token", timedelta(minutes=settings.widget_session_minutes)),
            passwords=Passwords(memory_kib=settings.password_hash_memory_kib,
                                time_cost=settings.password_hash_time_cost),
            reads=Reads(store, await _start_replica(stack, settings, store)),
            files=file_storages(settings, store),
            oidc=Providers(oidc_client),
            keys=KeyCache(pool, ttl=settings.key_cache_seconds,
                          acquire_timeout=settings.db_acquire_timeout,
                          on_lookup=lambda result: metrics.key_lookups.labels(result).inc()),
            role=role,
        )
        if role is ProcessRole.SERVE:
            await services.keys.start(_listen_dsn(settings))
            stack.push_async_callback(services.keys.stop)
        if role is ProcessRole.SERVE:
            hub = Hub(store, replay_window=settings.ws_replay_window,
                      poll_seconds=settings.ws_poll_seconds)
            await hub.start(_listen_dsn(settings))
            stack.push_async_callback(hub.stop)
            services.hub = hub
            presence = PresenceBoard(store, hub.cast,
                                     viewing_seconds=settings.ws_presence_seconds,
                                     typing_seconds=settings.ws_typing_seconds)
            presence.start(_listen_dsn(settings))
            stack.push_async_callback(presence.stop)
            services.presence = presence
        if role is ProcessRole.WORKER or (role is ProcessRole.SERVE and settings.run_scheduler):
            await _start_background(stack, services, extra_jobs)
        yield services


async def _check_replica_role(conn: asyncpg.Connection) -> None:
    """Every replica connection is checked like the primary's: a role that would bypass
    row-level security is refused (the replica then counts as unavailable)."""
    try:
        await check_runtime_role(conn)
    except UnsafeRole as exc:
        raise ReplicaRefused(f"READ_DATABASE_URL: {exc}") from exc


async def _start_replica(stack: AsyncExitStack, settings: ProcessSettings,
                         primary: EventStore) -> Replica | None:
    """The replica's pool and probe, or None without ``READ_DATABASE_URL``.

    The pool opens no connection up front (``min_size=0``): a replica that is down
    when the process starts is reported, never a reason not to start. One that answers
    as an unsafe role is: that is a configuration to fix, like DATABASE_URL's.
    """
    if not settings.read_database_url:
        return None
    pool = await create_pool(
        settings.read_database_url, min_size=0, max_size=settings.db_pool_max,
        connect_timeout=settings.db_connect_timeout,
        command_timeout=settings.db_command_timeout, pgbouncer=settings.pgbouncer,
        init=_check_replica_role,
    )
    stack.push_async_callback(close_pool, pool)
    replica = Replica(pool, primary, max_lag=settings.read_max_lag_seconds,
                      probe_seconds=settings.read_probe_seconds,
                      acquire_timeout=settings.db_acquire_timeout)
    await replica.start()
    stack.push_async_callback(replica.stop)
    if isinstance(replica.error, ReplicaRefused):
        raise UnsafeRole(str(replica.error))
    status = replica.status
    log.info("replica is %s%s", status.state, f" ({status.detail})" if status.detail else "")
    return replica


async def _start_background(stack: AsyncExitStack, services: Services,
                            extra_jobs: list[Registrar] | None) -> None:
    """The projector and the scheduler loop, stopped (within bounds) at teardown."""
    settings = services.settings
    projector = Projector(
        services.pool,
        batch_size=settings.projector_batch_size,
        poll_interval=settings.projector_poll_interval,
        concurrency=settings.projector_concurrency,
        listen_dsn=_listen_dsn(settings),
    )
    await projector.start()
    log.info("projector started: %s", ", ".join(projector.projections))
    stack.push_async_callback(_bounded, "projector stop", projector.stop,
                              settings.scheduler_grace_seconds + 5)
    services.projector = projector
    # The rule engine acts, so it has a projector of its own: it is never rebuilt with
    # the read models (handlers/rule_engine.py).
    engine = RuleEngine(services.store.keyring, services.clock.now, memo=services.store.memo)
    rules = Projector(services.pool, [engine],
                      batch_size=settings.projector_batch_size,
                      poll_interval=settings.projector_poll_interval,
                      listen_dsn=_listen_dsn(settings))
    await rules.start()
    stack.push_async_callback(_bounded, "rule engine stop", rules.stop,
                              settings.scheduler_grace_seconds + 5)
    scheduler = build_scheduler(services, extra_jobs)
    task = asyncio.create_task(scheduler.run(), name="scheduler")

    async def stop_scheduler() -> None:
        await scheduler.stop()
        await task

    stack.push_async_callback(stop_scheduler)
    services.scheduler = SchedulerRun(scheduler, task)
    log.info("scheduler running as %s (%s)", scheduler.worker_id, services.role)


async def _bounded(step: str, stop: Callable[[], object], timeout: float) -> None:
    """Run a stop step, giving up after ``timeout``: a stuck step is logged and skipped,
    never a process that ignores SIGTERM until it is killed."""
    try:
        result = stop()
        if asyncio.iscoroutine(result):
            await asyncio.wait_for(result, timeout)
    except TimeoutError:
        log.warning("%s did not finish within %.0f s; going on", step, timeout)
