"""The operator command line, run as a real subprocess."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import uuid
from pathlib import Path

import asyncpg
import pytest

from api.http.keycache import KeyCache
from eventstore.keys import Keyring
from eventstore.pool import create_pool
from eventstore.store import EventStore
from tests.support.desk import seed_tickets
from tests.support.wait import until_sync

ROOT = Path(__file__).resolve().parents[2]


def helpdesk(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "api.cli.main", *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=60, check=False)


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if k not in ("DATABASE_URL", "MIGRATION_DATABASE_URL")}
    env.update(extra)
    return env


@pytest.mark.slow  # runs `helpdesk` as a subprocess
async def test_tenants_create_prints_a_working_admin_key(db):
    env = _env(MIGRATION_DATABASE_URL=db.admin_url, DATABASE_URL=db.runtime_url)
    out = helpdesk("tenants", "create", "Acme Support", "--json", env=env)
    assert out.returncode == 0, out.stderr
    created = json.loads(out.stdout)
    assert set(created) == {"tenant_id", "slug", "api_key"}
    assert created["slug"] == "acme-support"
    pool = await create_pool(db.runtime_url)
    try:
        principal = await KeyCache(pool, ttl=0).lookup(created["api_key"])
    finally:
        await pool.close()
    assert principal is not None
    assert str(principal.tenant_id) == created["tenant_id"] and principal.role == "admin"

    human = helpdesk("tenants", "create", "Other", env=env)
    assert human.returncode == 0 and "admin API key: hd_" in human.stdout


@pytest.mark.slow  # runs `helpdesk` as a subprocess
async def test_tenant_slugs_are_chosen_unique_and_editable(db):
    env = _env(MIGRATION_DATABASE_URL=db.admin_url, DATABASE_URL=db.runtime_url)
    first = json.loads(helpdesk("tenants", "create", "Acme", "--slug", "Acme-Desk", "--json",
                                env=env).stdout)
    assert first["slug"] == "acme-desk"
    taken = helpdesk("tenants", "create", "Other", "--slug", "acme-desk", env=env)
    assert taken.returncode != 0 and "taken" in taken.stderr
    bad = helpdesk("tenants", "create", "Other", "--slug=nope-", env=env)
    assert bad.returncode != 0 and "hyphen" in bad.stderr
    # Without --slug, one from the name, made unique with a piece of the id.
    again = json.loads(helpdesk("tenants", "create", "Acme Desk", "--json", env=env).stdout)
    assert again["slug"] == f"acme-desk-{again['tenant_id'][:8]}"
    moved = helpdesk("tenants", "slug", first["tenant_id"], "acme", env=env)
    assert moved.returncode == 0, moved.stderr
    assert "'acme-desk' is now 'acme'" in moved.stdout
    refused = helpdesk("tenants", "slug", again["tenant_id"], "acme", env=env)
    assert refused.returncode != 0 and "taken" in refused.stderr
    conn = await asyncpg.connect(db.admin_url)
    try:
        assert await conn.fetchval("SELECT tenant_by_slug('ACME')") == uuid.UUID(
            first["tenant_id"])
        assert await conn.fetchval("SELECT tenant_by_slug('acme-desk')") is None
    finally:
        await conn.close()


@pytest.mark.slow  # runs `helpdesk` as a subprocess
async def test_migrate_is_a_no_op_on_a_migrated_database(db):
    env = _env(MIGRATION_DATABASE_URL=db.admin_url, DATABASE_URL=db.runtime_url)
    out = helpdesk("migrate", env=env)
    assert out.returncode == 0, out.stderr
    assert "up to date" in out.stderr


@pytest.mark.slow  # runs `helpdesk` as a subprocess
def test_migrate_without_url_explains_itself():
    out = helpdesk("migrate", env=_env())
    assert out.returncode == 2
    assert "MIGRATION_DATABASE_URL is not set" in out.stderr


def _one_line(out: subprocess.CompletedProcess[str], *words: str) -> None:
    """A refusal at start: a non-zero exit and one ``helpdesk: ...`` line on stderr
    naming the problem; no traceback, nothing else."""
    assert out.returncode != 0, out.stderr
    assert "Traceback" not in out.stderr, out.stderr
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("helpdesk: "), out.stderr
    assert all(word in lines[0] for word in words), out.stderr


@pytest.mark.slow  # runs `helpdesk` as a subprocess
@pytest.mark.parametrize("command", ["serve", "worker"])
async def test_a_role_that_bypasses_row_security_is_refused_in_one_line(db, command):
    out = helpdesk(command, env=_env(DATABASE_URL=db.admin_url, LOG_LEVEL="info"))
    _one_line(out, "refusing to run as role", "superuser")


@pytest.mark.slow  # runs `helpdesk` as a subprocess
@pytest.mark.parametrize("command", ["serve", "worker"])
def test_an_unreachable_database_at_start_is_one_line(command):
    with socket.socket() as s:  # a port where nothing listens
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    out = helpdesk(command, env=_env(DATABASE_URL=f"postgresql://nobody@127.0.0.1:{port}/none",
                                     DB_CONNECT_TIMEOUT="2", LOG_LEVEL="info"))
    _one_line(out, "cannot connect to Postgres")


@pytest.mark.slow  # runs scripts/serve as a subprocess
def test_scripts_serve_passes_its_arguments_to_helpdesk_serve():
    """``scripts/serve --port 8001``: the arguments reach ``helpdesk serve`` (they used
    to reach pip, as the extras to install)."""

    def serve(*args: str) -> subprocess.CompletedProcess[str]:
        env = _env(DATABASE_URL="postgresql://nobody@127.0.0.1:1/none", DB_CONNECT_TIMEOUT="2")
        return subprocess.run([str(ROOT / "scripts" / "serve"), *args], cwd=ROOT, env=env,
                              capture_output=True, text=True, timeout=600, check=False)

    helped = serve("--help")
    assert helped.returncode == 0, helped.stderr
    assert "usage: helpdesk serve" in helped.stdout and "--port" in helped.stdout
    bad = serve("--port", "not-a-port")
    assert bad.returncode == 2
    assert "argument --port: invalid int value: 'not-a-port'" in bad.stderr, bad.stderr
    # A good port gets as far as the database (which is not there).
    _one_line(serve("--port", "8001"), "cannot connect to Postgres")


@pytest.mark.slow  # runs `helpdesk` as a subprocess
def test_every_command_has_help():
    for args in (["--help"], ["serve", "--help"], ["worker", "--help"], ["migrate", "--help"],
                 ["tenants", "create", "--help"]):
        out = helpdesk(*args, env=_env())
        assert out.returncode == 0 and "usage: helpdesk" in out.stdout


async def test_runtime_role_cannot_create_tenants(db):
    conn = await asyncpg.connect(db.runtime_url)
    try:
        async with conn.transaction():
            await conn.execute("SELECT set_config('app.tenant_id', gen_random_uuid()::text, true)")
            with pytest.raises(asyncpg.InsufficientPrivilegeError):
                await conn.execute("INSERT INTO tenants (id, name) VALUES "
                                   "(current_setting('app.tenant_id')::uuid, 'x')")
    finally:
        await conn.close()


@pytest.mark.slow  # runs `helpdesk` as a subprocess
def test_worker_heartbeat_file_feeds_its_health_check(db, tmp_path):
    beat = tmp_path / "worker.heartbeat"
    env = _env(DATABASE_URL=db.runtime_url, WORKER_HEARTBEAT_FILE=str(beat),
               LOG_LEVEL="warning")
    assert helpdesk("worker", "--check", env=env).returncode == 1  # no worker yet
    worker = subprocess.Popen([sys.executable, "-m", "api.cli.main", "worker"], cwd=ROOT, env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        until_sync(lambda: helpdesk("worker", "--check", env=env).returncode == 0,
                   timeout=120, interval=0.2, what="the worker to write a fresh heartbeat")
    finally:
        worker.terminate()
        assert worker.wait(timeout=30) == 0
    beat.write_text("1000.0\n")  # a heartbeat from long ago: a stalled or dead worker
    stale = helpdesk("worker", "--check", env=env)
    assert stale.returncode == 1 and "old" in stale.stderr


@pytest.mark.slow  # runs `helpdesk` as a subprocess
async def test_search_rebuild_reindexes_a_tenant(db, make_tenant):
    tenant = (await make_tenant()).tenant_id
    await seed_tickets(db.runtime_url, tenant, 3)
    admin = await asyncpg.connect(db.admin_url)
    try:
        await admin.execute("DELETE FROM search_documents")
        env = _env(MIGRATION_DATABASE_URL=db.admin_url, DATABASE_URL=db.runtime_url)
        out = helpdesk("search", "rebuild", "--tenant", str(tenant), env=env)
        assert out.returncode == 0, out.stderr
        contacts = await admin.fetchval("SELECT count(*) FROM contacts WHERE tenant_id = $1",
                                        tenant)
        assert f"3 ticket(s), {contacts} contact(s), 0 organization(s) indexed" in out.stderr
        kinds = dict(await admin.fetch("SELECT kind, count(*) FROM search_documents "
                                       "WHERE tenant_id = $1 GROUP BY kind", tenant))
        assert kinds == {"ticket": 3, "contact": contacts} and contacts >= 1
    finally:
        await admin.close()


@pytest.mark.slow  # runs `helpdesk` as a subprocess
async def test_keys_rotate_rewraps_and_a_wrong_data_key_is_refused_in_one_line(
        db, make_tenant, store):
    from tests.integration.test_data_keys import _opened, _read

    tenant = (await make_tenant()).tenant_id
    tickets = [await _opened(store, tenant, f"p{i}") for i in range(3)]
    before = [await _read(store, tenant, t) for t in tickets]
    env = _env(MIGRATION_DATABASE_URL=db.admin_url, DATABASE_URL=db.runtime_url)
    # Keys made before rows named their key-encryption key: a run with the key as it is
    # names it.
    admin = await asyncpg.connect(db.admin_url)
    try:
        await admin.execute("UPDATE data_keys SET kek = NULL")
        stamped = helpdesk("keys", "rotate", env=env)
        assert stamped.returncode == 0, stamped.stderr
        assert "3 data key(s) re-wrapped" in stamped.stderr
        assert await admin.fetchval("SELECT count(DISTINCT kek) FROM data_keys "
                                    "WHERE kek IS NOT NULL") == 1
    finally:
        await admin.close()
    assert helpdesk("keys", "rotate", "--batch-size", "0", env=env).returncode == 2
    # From the database's stored secret to DATA_KEY, two keys per transaction.
    new = "a new key-encryption key"
    rotated = helpdesk("keys", "rotate", "--batch-size", "2", env=env | {"DATA_KEY": new})
    assert rotated.returncode == 0, rotated.stderr
    assert "3 data key(s) re-wrapped; every live data key is wrapped by" in rotated.stderr
    again = helpdesk("keys", "rotate", env=env | {"DATA_KEY": new})
    assert again.returncode == 0 and "0 data key(s) re-wrapped" in again.stderr
    after = EventStore(store.pool, keyring=Keyring(new.encode()))
    assert [await _read(after, tenant, t) for t in tickets] == before

    # A process whose key-encryption key wraps none of them refuses to start.
    for command in ("serve", "worker"):
        _one_line(helpdesk(command, env=env | {"DATA_KEY": "not the key it was at all"}),
                  "DATA_KEY does not match the database", "3 by ")
    _one_line(helpdesk("worker", env=env), "DATA_KEY does not match the database")
