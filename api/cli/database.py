"""Where the command line's database is: DATABASE_URL, or the embedded Postgres.

With no DATABASE_URL, commands start (or join) the embedded Postgres in DATA_DIR for as
long as they run, and migrate it (``serve`` then seeds the demo tenants on the first
start: ``api.cli.demo.embedded_demo``).
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
from collections.abc import Iterator

from api.config import ProcessSettings


@contextlib.contextmanager
def using_database(
    settings: ProcessSettings, *, announce: bool = True
) -> Iterator[ProcessSettings]:
    """Settings with DATABASE_URL and MIGRATION_DATABASE_URL filled in, for the block.

    With no DATABASE_URL, start (or join) the embedded Postgres in DATA_DIR and migrate
    it; the server is stopped when the block exits, unless another helpdesk process
    still uses it (``api.cli.embedded``).
    """
    if settings.database_url:
        yield settings
        return
    from api.cli import embedded
    from migrations.runner import migrate

    if announce:
        print(f"helpdesk: no DATABASE_URL; using the embedded Postgres in {settings.data_dir}/pg",
              file=sys.stderr)
    from handlers.upgrades import upgrade

    with embedded.using(settings.data_dir) as urls:
        asyncio.run(migrate(urls.owner_url, runtime_user=embedded.RUNTIME_USER,
                            runtime_password=_password(urls.runtime_url)))
        asyncio.run(upgrade(urls.owner_url))
        yield settings.model_copy(update={"database_url": urls.runtime_url,
                                          "migration_database_url": urls.owner_url})


@contextlib.contextmanager
def owner_url(settings: ProcessSettings) -> Iterator[str]:
    """The owner role's URL for an operator's command: MIGRATION_DATABASE_URL, else the
    embedded Postgres's (running for the command's length); neither ends the command."""
    with contextlib.ExitStack() as stack:
        if not settings.migration_database_url:
            settings = stack.enter_context(using_database(settings))
        if not settings.migration_database_url:
            print("helpdesk: MIGRATION_DATABASE_URL is not set (the owner role's URL)",
                  file=sys.stderr)
            raise SystemExit(2)
        yield settings.migration_database_url


def _password(url: str) -> str | None:
    from urllib.parse import unquote, urlsplit

    pw = urlsplit(url).password
    return unquote(pw) if pw else None
