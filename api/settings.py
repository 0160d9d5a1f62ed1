"""Process settings, read from the environment (and a ``.env`` file if present).

Every variable is documented in the README's settings table; a test checks that the
README, ``docker-compose.yml`` and this class agree.
"""

from __future__ import annotations

from pathlib import Path
from urllib.parse import urlsplit

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict


class Settings(BaseSettings):
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
    pgbouncer: bool = Field(
        default=False, description="DATABASE_URL points at PgBouncer in transaction mode."
    )
    db_pool_min: int = Field(default=2, ge=0, le=100)
    db_pool_max: int = Field(default=10, ge=1, le=500)
    db_connect_timeout: float = Field(
        default=3.0, gt=0, description="Seconds before a connection attempt gives up."
    )
    db_command_timeout: float = Field(default=30.0, gt=0)
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
    host: str = "127.0.0.1"
    port: int = Field(default=8000, ge=1, le=65535)
    data_dir: Path = Field(
        default=Path(".helpdesk"), description="Where the embedded Postgres keeps its data."
    )
    log_level: str = "info"
    max_body_bytes: int = Field(default=1_048_576, ge=1024)
    cursor_secret: str | None = Field(
        default=None,
        description="Key that signs list cursors; unset: the random secret stored in the "
        "database by the migrations (shared by every process on that database).",
    )

    def runtime_user(self) -> tuple[str | None, str | None]:
        """The user and password of DATABASE_URL, for `helpdesk migrate` to provision."""
        if not self.database_url:
            return None, None
        parts = urlsplit(self.database_url)
        return parts.username, parts.password
