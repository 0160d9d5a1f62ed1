"""Shared bench plumbing: a fresh migrated database and a tiny results printer.

Uses BENCH_DATABASE_URL, else TEST_DATABASE_URL (superuser URLs), else an embedded
Postgres. Every figure is printed beside a baseline measured in the same run.
"""

from __future__ import annotations

import contextlib
import json
import os
import uuid
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path

import asyncpg

from migrations.runner import migrate
from tests.support.pg import RUNTIME_PASSWORD, RUNTIME_USER, server_url, with_database


@dataclass(frozen=True)
class BenchDb:
    admin_url: str
    runtime_url: str


@contextlib.contextmanager
def bench_server() -> Iterator[str]:
    url = os.environ.get("BENCH_DATABASE_URL")
    if url:
        yield url
        return
    with server_url() as url:
        yield url


@contextlib.asynccontextmanager
async def fresh_database(server: str, prefix: str = "hd_bench") -> AsyncIterator[BenchDb]:
    name = f"{prefix}_{uuid.uuid4().hex[:8]}"
    admin = await asyncpg.connect(server)
    await admin.execute(f'CREATE DATABASE "{name}"')
    await admin.close()
    try:
        url = with_database(server, name)
        await migrate(url, runtime_user=RUNTIME_USER, runtime_password=RUNTIME_PASSWORD)
        yield BenchDb(url, with_database(server, name, user=RUNTIME_USER,
                                         password=RUNTIME_PASSWORD))
    finally:
        admin = await asyncpg.connect(server)
        await admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        await admin.close()


def report(name: str, rows: list[dict[str, object]]) -> None:
    """Print a table and append machine-readable rows to bench/results.jsonl."""
    print(f"\n{name}")
    print(f"{'figure':<44} {'value':>14} {'baseline':>14} {'ratio':>8}  target")
    for r in rows:
        print(f"{r['figure']!s:<44} {r['value']!s:>14} {r['baseline']!s:>14} "
              f"{r['ratio']!s:>8}  {r.get('target', '')}")
    out = Path(os.environ.get("BENCH_RESULTS", Path(__file__).with_name("results.jsonl")))
    with out.open("a") as f:
        for r in rows:
            f.write(json.dumps({"bench": name, **r}) + "\n")
