"""Where the command line's database is: DATABASE_URL, or the embedded Postgres.

With no DATABASE_URL, commands start (or join) the embedded Postgres in DATA_DIR for as
long as they run, migrate it, and ``serve`` makes sure its demo tenant exists.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import sys
from collections.abc import Iterator

from api.config import Settings


@contextlib.contextmanager
def using_database(settings: Settings, *, announce: bool = True) -> Iterator[Settings]:
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
    with embedded.using(settings.data_dir) as urls:
        asyncio.run(migrate(urls.owner_url, runtime_user=embedded.RUNTIME_USER,
                            runtime_password=_password(urls.runtime_url)))
        yield settings.model_copy(update={"database_url": urls.runtime_url,
                                          "migration_database_url": urls.owner_url})


def _password(url: str) -> str | None:
    from urllib.parse import unquote, urlsplit

    pw = urlsplit(url).password
    return unquote(pw) if pw else None


def demo_tenant(settings: Settings) -> dict[str, str]:
    """The embedded server's demo tenant, created on first start."""
    from handlers.tenants import create_tenant_as_operator

    path = settings.data_dir / "demo-tenant.json"
    if path.exists():
        data: dict[str, str] = json.loads(path.read_text())
        return data
    assert settings.migration_database_url
    t = asyncio.run(create_tenant_as_operator(settings.migration_database_url, "Demo"))
    data = {"tenant_id": str(t.tenant_id), "api_key": t.admin_key.secret}
    path.write_text(json.dumps(data))
    os.chmod(path, 0o600)
    return data
