"""Process settings, read from the environment (and a ``.env`` file if present).

Every variable is documented in the README's settings table; a test checks that the
README, ``docker-compose.yml`` and this class agree.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal
from urllib.parse import urlsplit

from pydantic import Field, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from projections.tenant_settings import widget_origin


class ProcessSettings(BaseSettings):
    """Everything a process needs to know about its surroundings."""

    model_config = SettingsConfigDict(env_file=".env", extra="ignore", frozen=True)

    database_url: str | None = Field(
        default=None,
        description="Runtime role's URL. Unset: start an embedded Postgres in DATA_DIR.",
    )
    migration_database_url: str | None = Field(
        default=None,
        description="Owner URL for `helpdesk migrate` and operator commands.",
    )
    listen_database_url: str | None = Field(
        default=None,
        description="Direct URL for LISTEN connections when DATABASE_URL goes through "
        "PgBouncer; defaults to DATABASE_URL.",
    )
    read_database_url: str | None = Field(
        default=None,
        description="Runtime role's URL on a streaming replica: analytics, audit reads and "
        "`projections status` read there while it is fit. Unset: they read the primary.",
    )
    read_max_lag_seconds: float = Field(
        default=30.0, gt=0, le=86_400,
        description="A replica further behind than this is not read; its readers go to "
        "the primary.",
    )
    read_probe_seconds: float = Field(
        default=1.0, gt=0, le=60,
        description="How often a process measures the replica's delay.",
    )
    pgbouncer: bool = Field(
        default=False, description="DATABASE_URL points at PgBouncer in transaction mode."
    )
    db_pool_min: int = Field(default=2, ge=0, le=100)
    db_pool_max: int = Field(default=10, ge=1, le=500)
    db_connect_timeout: float = Field(
        default=3.0, gt=0, description="Seconds before a connection attempt gives up."
    )
    db_command_timeout: float = Field(default=30.0, gt=0)
    db_acquire_timeout: float = Field(
        default=5.0, gt=0,
        description="Seconds a request waits for a free pooled connection before a 503.",
    )
    redis_url: str | None = Field(default=None, description="Unset: no rate limits, no cache.")
    run_scheduler: bool = Field(
        default=False, description="Run the scheduler and projectors inside the API process."
    )
    scheduler_concurrency: int = Field(
        default=8, ge=1, le=256, description="Jobs one scheduler loop runs at once."
    )
    scheduler_poll_interval: float = Field(
        default=5.0, gt=0, le=300,
        description="Longest sleep between looks at the queue when no NOTIFY arrives.",
    )
    scheduler_lease_seconds: float = Field(
        default=30.0, gt=0, description="A crashed worker's jobs are taken again after this."
    )
    scheduler_grace_seconds: float = Field(
        default=10.0, ge=0, description="At shutdown, how long running jobs may finish."
    )
    jobs_done_retention_hours: float = Field(default=24.0, gt=0)
    jobs_dead_retention_days: float = Field(default=14.0, gt=0)
    workers: int | None = Field(
        default=None, ge=1, le=64,
        description="API processes `serve` runs on one port; unset: one per core with "
        "DATABASE_URL, 1 on the embedded Postgres.",
    )
    host: str = "127.0.0.1"
    port: int = Field(default=8000, ge=1, le=65535)
    data_dir: Path = Field(
        default=Path(".helpdesk"), description="Where the embedded Postgres keeps its data."
    )
    worker_heartbeat_file: Path | None = Field(
        default=None,
        description="File `helpdesk worker` refreshes while its scheduler loop is healthy; "
        "`helpdesk worker --check` reads it (container health checks).",
    )
    log_level: str = "info"
    max_body_bytes: int = Field(default=1_048_576, ge=1024)
    file_storage: Literal["postgres", "filesystem"] = Field(
        default="postgres",
        description="Where uploaded files' bytes are kept: `postgres` (chunk rows, under "
        "row-level security) or `filesystem` (FILE_STORAGE_DIR).")
    file_storage_dir: Path | None = Field(
        default=None,
        description="The directory files are kept in with FILE_STORAGE=filesystem; files "
        "already kept there stay readable when FILE_STORAGE moves back to postgres.")
    http_head_timeout: float = Field(
        default=10.0, gt=0, le=3600,
        description="Seconds a client has to send a request's head (request line and "
        "headers), from connecting or from its first byte; then the connection is closed.",
    )
    http_body_timeout: float = Field(
        default=30.0, gt=0, le=3600,
        description="Seconds a client has, once the head is in, to send the whole body "
        "(plus the time HTTP_BODY_MIN_RATE allows for the bytes it has sent); then 408 "
        "and the connection is closed.",
    )
    http_body_min_rate: int = Field(
        default=65_536, ge=0, le=1 << 30,
        description="Bytes per second a large body earns beyond HTTP_BODY_TIMEOUT: every "
        "byte received moves the body deadline on by 1/rate seconds, so an upload that "
        "keeps at least this rate is never cut off, while a trickle still meets the "
        "deadline (0: the whole body within HTTP_BODY_TIMEOUT).",
    )
    max_connections: int = Field(
        default=1000, ge=2, le=1_000_000,
        description="Connections (HTTP and WebSocket) one `helpdesk serve` process holds "
        "at once; a request beyond it gets 503.",
    )
    projector_batch_size: int = Field(
        default=500, ge=1, le=10_000, description="Events a projector applies per transaction."
    )
    projector_poll_interval: float = Field(
        default=1.0, gt=0, description="Seconds between projector polls when no NOTIFY arrives."
    )
    projector_concurrency: int = Field(
        default=1, ge=1, le=32, description="Projector batches a process runs at once."
    )
    ws_replay_window: int = Field(
        default=1000, ge=0, le=100_000,
        description="How many events back a WebSocket subscriber may resume; older: gap.",
    )
    ws_send_queue: int = Field(
        default=2048, ge=16, le=100_000,
        description="Messages queued per WebSocket before a slow subscriber gets a gap.",
    )
    ws_stall_seconds: float = Field(
        default=10.0, gt=0, le=600,
        description="How long a WebSocket may take nothing while messages wait: then its "
        "subscriptions get a gap; if it still takes nothing as long again, it is closed "
        "with 4408.",
    )
    ws_heartbeat_seconds: float = Field(
        default=15.0, gt=0, description="Interval of server heartbeats on the WebSocket feed.",
    )
    ws_poll_seconds: float = Field(
        default=1.0, gt=0,
        description="How often the WebSocket hub polls for events whose notification was lost.",
    )
    ws_auth_recheck_seconds: float = Field(
        default=30.0, gt=0,
        description="How often a WebSocket's API key is re-checked; revoked keys are cut off.",
    )
    ws_presence_seconds: float = Field(
        default=30.0, gt=0, le=3600,
        description="How long an agent's presence on a ticket (viewing) lasts on the feed "
        "unless its client refreshes it.",
    )
    ws_typing_seconds: float = Field(
        default=6.0, gt=0, le=3600,
        description="How long an agent's typing on a ticket lasts on the feed unless its "
        "client refreshes it; then it is viewing again.",
    )
    redis_socket_timeout: float = Field(
        default=0.1, gt=0, le=10, description="Seconds a Redis operation may take."
    )
    redis_connect_timeout: float = Field(
        default=0.1, gt=0, le=10, description="Seconds a Redis connection attempt may take."
    )
    redis_breaker_failures: int = Field(
        default=3, ge=1, description="Consecutive Redis failures that open the breaker."
    )
    redis_breaker_cooldown: float = Field(
        default=5.0, gt=0, description="Seconds Redis is skipped once the breaker opens."
    )
    rate_limit_per_key: int = Field(
        default=600, ge=1, description="Requests per window per API key."
    )
    rate_limit_per_address: int = Field(
        default=60, ge=1,
        description="Requests per window per client address without a key; also failed "
                    "authentications per window per address.",
    )
    rate_limit_window: int = Field(default=60, ge=1, description="Rate limit window, seconds.")
    cache_ttl: int = Field(default=300, ge=1, description="Seconds an analytics answer is kept.")
    webhook_timeout: float = Field(
        default=5.0, gt=0, le=60, description="Seconds a webhook receiver has to answer."
    )
    webhook_allow_private_addresses: bool = Field(
        default=False,
        description="Let webhooks reach loopback, private and link-local addresses "
        "(off: a tenant's webhook cannot probe the service's own network).",
    )
    mail_poll_seconds: int = Field(
        default=60, ge=5, le=3600,
        description="Seconds between polls of a tenant's IMAP mailboxes (docs/email.md).",
    )
    slack_api_url: str = Field(
        default="https://slack.com/api", max_length=300,
        description="Where Slack's Web API is (chat.postMessage, conversations.replies); "
        "a test points it at a local server (docs/slack.md).",
    )
    slack_timeout: float = Field(
        default=10.0, gt=0, le=60, description="Seconds Slack has to answer a post."
    )
    mail_idle_tenants: int = Field(
        default=4, ge=0, le=256,
        description="Tenants whose IMAP mailboxes one scheduler loop watches with IDLE at "
                    "once, each holding one of its job slots; the rest are polled, and 0 "
                    "turns IDLE off (docs/email.md).",
    )
    public_url: str = Field(
        default="", max_length=300,
        description="The address people reach the service at (https://desk.example.com), "
        "which the links in notification mail start with; unset, they are paths only.",
    )
    webhook_max_attempts: int = Field(
        default=8, ge=1, le=50, description="Delivery attempts before a webhook job is dead."
    )
    log_json: bool = Field(default=True, description="Log JSON lines (false: plain text).")
    key_cache_seconds: float = Field(
        default=10.0, ge=0, le=300,
        description="How long a process remembers a valid API key's lookup; changes to "
        "keys and agents clear it in every process at once (0: look up every request).",
    )
    cursor_secret: str | None = Field(
        default=None,
        description="Key that signs list cursors; unset: the random secret stored in the "
        "database by the migrations (shared by every process on that database).",
    )
    idempotency_secret: str | None = Field(
        default=None, min_length=16,
        description="Key, kept out of the database, that seals an issued API key's secret "
        "in its Idempotency-Key record so a replay shows it again; unset: such a replay "
        "is refused (409 naming the key to revoke).",
    )
    access_token_minutes: float = Field(
        default=15.0, gt=0, le=1440,
        description="How long a signed-in person's access token is valid, in minutes; the "
        "console renews it through the refresh cookie.",
    )
    access_token_secret: str | None = Field(
        default=None, min_length=16,
        description="Key that signs access tokens; unset: the random secret stored in the "
        "database by the migrations (shared by every process on that database).",
    )
    data_key: str | None = Field(
        default=None, min_length=16,
        description="Key-encryption key that wraps the data keys of personal data; "
        "unset: the random secret stored in the database by the migrations.",
    )
    data_key_previous: str | None = Field(
        default=None, min_length=16,
        description="During a rotation of DATA_KEY, the key it replaces: data keys still "
        "wrapped by it are read until `helpdesk keys rotate` re-wraps them; unset with "
        "DATA_KEY set: the secret stored in the database (moving off it is a rotation).",
    )
    refresh_token_days: float = Field(
        default=30.0, gt=0, le=365,
        description="A session's refresh token expires after this many days without use "
        "(each refresh starts the period again, up to SESSION_MAX_DAYS); staff and "
        "portal sessions alike.",
    )
    session_max_days: float = Field(
        default=90.0, gt=0, le=3650,
        description="A sign-in session ends this many days after it began, however often "
        "it is refreshed; staff and portal sessions alike.",
    )
    invitation_hours: float = Field(
        default=72.0, gt=0, le=24 * 90,
        description="How long an invitation's token may be spent, in hours.",
    )
    portal_link_hours: float = Field(
        default=72.0, gt=0, le=24 * 90,
        description="How long a customer's portal password link may be spent, in hours.",
    )
    widget_session_minutes: float = Field(
        default=60.0, gt=0, le=24 * 60,
        description="How long an embeddable widget's session (and its token) lasts; the "
        "visitor then opens a new one.",
    )
    widget_sessions_per_address: int = Field(
        default=10, ge=1,
        description="Widget sessions one client address may open per RATE_LIMIT_WINDOW.",
    )
    widget_sessions_per_origin: int = Field(
        default=600, ge=1,
        description="Widget sessions one tenant's widget origin may open per "
        "RATE_LIMIT_WINDOW, from all addresses together.",
    )
    cors_origins: str = Field(
        default="",
        description="Comma-separated web origins of front ends (a console served "
        "elsewhere) that browsers may let call the API with credentials (CORS); empty: "
        "none. Widget routes never answer credentialed CORS (their origins are the "
        "tenants' widget_origins).",
    )
    password_hash_memory_kib: int = Field(
        default=65536, ge=64, le=4 * 1024 * 1024,
        description="Memory of one argon2id password hash, in KiB; a password hashed with "
        "other parameters is rehashed when its owner next signs in.",
    )
    password_hash_time_cost: int = Field(
        default=3, ge=1, le=20,
        description="Iterations of one argon2id password hash; a password hashed with "
        "other parameters is rehashed when its owner next signs in.",
    )

    @field_validator("cors_origins")
    @classmethod
    def _origins(cls, value: str) -> str:
        return ",".join(widget_origin(v.strip()) for v in value.split(",") if v.strip())

    @property
    def cors_origin_set(self) -> frozenset[str]:
        """``CORS_ORIGINS`` as origins in the form browsers send them."""
        return frozenset(v for v in self.cors_origins.split(",") if v)

    def environment(self, *names: str) -> dict[str, str]:
        """The named settings as environment variables, for child processes that build
        their own ``ProcessSettings`` (unset ones are left out)."""
        out: dict[str, str] = {}
        for name in names:
            value = getattr(self, name)
            if value is not None:
                out[name.upper()] = str(value).lower() if isinstance(value, bool) else str(value)
        return out

    def runtime_user(self) -> tuple[str | None, str | None]:
        """The user and password of DATABASE_URL, for `helpdesk migrate` to provision."""
        if not self.database_url:
            return None, None
        parts = urlsplit(self.database_url)
        return parts.username, parts.password
