"""Where the command line's database is: DATABASE_URL, or the embedded Postgres.

With no DATABASE_URL, commands start (or join) the embedded Postgres in DATA_DIR for as
long as they run, migrate it, and ``serve`` seeds the demo tenants on the first start.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
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


def _password(url: str) -> str | None:
    from urllib.parse import unquote, urlsplit

    pw = urlsplit(url).password
    return unquote(pw) if pw else None


def embedded_demo(settings: ProcessSettings, base_url: str) -> str:
    """What the embedded server prints at start-up: the demo tenants and their keys.

    The first start seeds the demo (``helpdesk demo seed``) and keeps the keys in
    ``DATA_DIR/demo.json``, readable by the owner only, to show them at every start. A
    data directory from before the demo has its one tenant in ``demo-tenant.json``:
    that one is shown, and nothing is added to it.
    """
    from api.cli.demo import describe, seed

    path = settings.data_dir / "demo.json"
    legacy = settings.data_dir / "demo-tenant.json"
    if not path.exists() and legacy.exists():
        old: dict[str, str] = json.loads(legacy.read_text())
        return (f"  Console:       {base_url}/console/\n"
                f"  API docs:      {base_url}/docs\n"
                f"  Demo tenant:   {old['tenant_id']}\n"
                f"  Admin API key: {old['api_key']}\n"
                "  (`helpdesk demo seed` adds the demo tenants with six weeks of tickets)")
    if not path.exists():
        demo = asyncio.run(seed(settings))
        partial = path.with_suffix(".json.partial")
        partial.write_text(json.dumps(demo))
        os.chmod(partial, 0o600)
        partial.replace(path)
    return describe(json.loads(path.read_text()), base_url)
