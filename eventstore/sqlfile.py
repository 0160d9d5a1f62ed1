"""Load named SQL statements from a package's ``queries.sql``.

Each statement starts with a ``-- name: x --`` header; the line after it names the
``$1..$n`` arguments. Statements are read once, at import of the module that asks.
"""

from __future__ import annotations

import re
from pathlib import Path

_HEADER = re.compile(r"^--\s*name:\s*([a-z_][a-z0-9_]*)\s*--\s*$", re.MULTILINE)


def load_queries(path: Path) -> dict[str, str]:
    """Return ``{name: sql}`` for every named statement in ``path``."""
    text = path.read_text(encoding="utf-8")
    parts = _HEADER.split(text)
    queries: dict[str, str] = {}
    # parts = [preamble, name1, body1, name2, body2, ...]
    for name, body in zip(parts[1::2], parts[2::2], strict=True):
        if name in queries:
            raise ValueError(f"{path}: query {name!r} defined twice")
        queries[name] = body.strip().rstrip(";")
    return queries
