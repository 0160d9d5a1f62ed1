"""The move as docs/operations.md gives it: ``helpdesk tenant export ... | helpdesk tenant
import ...``, two processes of the command line with an OS pipe between them, each with
its own database's environment. The target holds the source's chain, verified, and the
ticket reads there as it did at the source (tests/e2e/test_tenant_move.py checks every
part of a move through a file the same way, in process)."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from api.app import create_app
from api.cli.audit import verify_tenant
from api.config import ProcessSettings
from tests.e2e.conftest import NEW_TICKET, auth
from tests.support import pg
from tests.support.http import asgi_client

pytestmark = pytest.mark.slow  # two command-line processes

ROOT = Path(__file__).resolve().parents[2]
KEY = "a transport key for the piped move"


def _env(database: pg.TestDatabase) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("DATA_KEY", "DATA_KEY_PREVIOUS")}
    return env | {"DATABASE_URL": database.runtime_url,
                  "MIGRATION_DATABASE_URL": database.admin_url, "PYTHONPATH": str(ROOT)}


async def test_the_move_piped_between_two_processes(
        http, tenant, db, databases: pg.Databases) -> None:
    h = auth(tenant.admin_key)
    opened = await http.post("/v1/tickets", headers=h, json=NEW_TICKET)
    assert opened.status_code == 201, opened.text
    ticket = opened.json()["id"]
    r = await http.post(f"/v1/tickets/{ticket}/messages", headers=h,
                        json={"body": "on our way", "visibility": "public"})
    assert r.status_code == 201, r.text
    before = await http.get(f"/v1/tickets/{ticket}/messages", headers=h)
    source_chain = await pg.event_chain(db.admin_url, tenant.tenant_id)

    target = await databases.clone()
    try:
        helpdesk = [sys.executable, "-m", "api.cli.main"]
        read_end, write_end = os.pipe()
        exporter = await asyncio.create_subprocess_exec(
            *helpdesk, "tenant", "export", "--tenant", str(tenant.tenant_id),
            "--transport-key", KEY, stdout=write_end, stderr=subprocess.PIPE,
            env=_env(db), cwd=ROOT)
        importer = await asyncio.create_subprocess_exec(
            *helpdesk, "tenant", "import", "--transport-key", KEY, "--quiet",
            stdin=read_end, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=_env(target),
            cwd=ROOT)
        os.close(read_end)
        os.close(write_end)
        (_, exported), (imported, failed) = await asyncio.wait_for(asyncio.gather(
            exporter.communicate(), importer.communicate()), 120)
        assert exporter.returncode == 0, exported.decode()
        assert importer.returncode == 0, failed.decode()
        done = orjson.loads(imported)
        assert (done["events"], done["head_seq"]) == (len(source_chain), source_chain[-1][0])

        assert await pg.event_chain(target.admin_url, tenant.tenant_id) == source_chain
        there = ProcessSettings(  # type: ignore[call-arg]
            _env_file=None, database_url=target.runtime_url, db_pool_min=1,
            password_hash_memory_kib=1024, password_hash_time_cost=1)
        report = await verify_tenant(there, tenant.tenant_id, progress=False)
        assert report["ok"] is True and report["checked"] == len(source_chain), report
        async with asgi_client(create_app(there)) as moved:
            got = await moved.get(f"/v1/tickets/{ticket}/messages", headers=h)
        assert got.status_code == 200, got.text
        assert got.content == before.content
    finally:
        await databases.drop(target.name)
