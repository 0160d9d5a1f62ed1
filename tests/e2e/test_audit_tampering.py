"""A superuser's edit is found at its seq: by the endpoint, by the CLI, and offline in
an export verified with no database."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from pathlib import Path

import asyncpg
import orjson
import pytest

from tests.e2e.audit_support import ticket_with_history
from tests.e2e.conftest import bearer

ROOT = Path(__file__).parents[2]

# Each test runs `helpdesk audit` as a subprocess.
pytestmark = pytest.mark.slow


def cli(db, *args: str) -> subprocess.CompletedProcess[bytes]:
    env = {**os.environ, "DATABASE_URL": db.runtime_url}
    env.pop("MIGRATION_DATABASE_URL", None)
    return subprocess.run([sys.executable, "-m", "api.cli.main", "audit", *args], cwd=ROOT,
                          env=env, capture_output=True, timeout=120, check=False)


def verify_with_no_database(path: Path) -> subprocess.CompletedProcess[bytes]:
    env = {k: v for k, v in os.environ.items() if "DATABASE" not in k}
    return subprocess.run([sys.executable, "-m", "api.cli.main", "audit", "verify", "--file",
                           str(path)], cwd=ROOT, env=env, capture_output=True, timeout=60,
                          check=False)


async def _tamper(db, sql: str) -> None:
    conn = await asyncpg.connect(db.admin_url)
    try:
        # A superuser can switch the immutability triggers off; the chain still knows.
        await conn.execute("SET session_replication_role = replica")
        await conn.execute(sql)
    finally:
        await conn.close()


async def _populated(http, store, make_tenant):
    t = await make_tenant()
    r = await http.post("/v1/api-keys", json={"name": "a", "role": "auditor"},
                        headers=bearer(t.admin_key.secret))
    auditor = r.json()
    await ticket_with_history(store, t.tenant_id, uuid.uuid4(), uuid.uuid4())
    return t, auditor


async def test_untouched_chain_verifies_everywhere(http, store, make_tenant, db, tmp_path):
    t, _auditor = await _populated(http, store, make_tenant)
    run = cli(db, "verify", "--tenant", str(t.tenant_id))
    assert run.returncode == 0, run.stderr
    report = orjson.loads(run.stdout)
    assert report["ok"] and report["checked"] == report["head_seq"] == 24
    assert b"verifying" in run.stderr  # the progress bar

    run = cli(db, "export", "--tenant", str(t.tenant_id))
    assert run.returncode == 0, run.stderr
    lines = run.stdout.splitlines()
    assert len(lines) == 25  # header + 24 events
    export = tmp_path / "all.jsonl"
    export.write_bytes(run.stdout)
    offline = verify_with_no_database(export)
    assert offline.returncode == 0, offline.stderr
    assert orjson.loads(offline.stdout)["checked"] == 24

    # A partial export is anchored on the link before it and verifies too.
    run = cli(db, "export", "--tenant", str(t.tenant_id), "--from-seq", "5", "--to-seq", "12")
    part = tmp_path / "part.jsonl"
    part.write_bytes(run.stdout)
    offline = cli(db, "verify", "--file", str(part))
    assert offline.returncode == 0 and orjson.loads(offline.stdout)["checked"] == 8

    # Editing the file is caught offline.
    edited = export.read_bytes().replace(b'"Printer on fire"', b'"Printer is fine"')
    assert edited != export.read_bytes()
    export.write_bytes(edited)
    offline = cli(db, "verify", "--file", str(export))
    assert offline.returncode == 1
    assert orjson.loads(offline.stdout)["first_bad_seq"] == 3  # the TicketOpened


@pytest.mark.parametrize(("sql", "bad"), [
    # change a field of one event (the ticket's subject, in its TicketOpened at seq 3;
    # seqs 1 and 2 are the two ApiKeyIssued events)
    ("UPDATE events SET data = jsonb_set(data, '{subject}', '\"fine\"') WHERE seq = 3", 3),
    # change who did it
    ("UPDATE events SET actor_id = 'nobody' WHERE seq = 9", 9),
    # delete a row, in the middle and at the head
    ("DELETE FROM events WHERE seq = 12", 12),
    ("DELETE FROM events WHERE seq = 24", 24),
    # swap two rows' positions in the sequence
    ("UPDATE events SET seq = -15 WHERE seq = 15; UPDATE events SET seq = 15 WHERE seq = 16;"
     " UPDATE events SET seq = 16 WHERE seq = -15", 15),
])
async def test_tampering_is_found_at_its_seq(http, store, make_tenant, db, tmp_path, sql, bad):
    t, auditor = await _populated(http, store, make_tenant)
    await _tamper(db, sql)

    r = await http.get("/v1/audit/verify", headers=bearer(auditor["secret"]))
    assert r.status_code == 200
    assert r.json()["ok"] is False and r.json()["first_bad_seq"] == bad

    run = cli(db, "verify", "--tenant", str(t.tenant_id), "--quiet")
    assert run.returncode == 1, run.stderr
    assert orjson.loads(run.stdout)["first_bad_seq"] == bad

    run = cli(db, "export", "--tenant", str(t.tenant_id))
    assert run.returncode == 0, run.stderr
    export = tmp_path / "export.jsonl"
    export.write_bytes(run.stdout)
    offline = cli(db, "verify", "--file", str(export))
    assert offline.returncode == 1, offline.stderr
    assert orjson.loads(offline.stdout)["first_bad_seq"] == bad


async def test_verify_files_reads_every_file_back_and_finds_one_altered(http, make_tenant, db):
    t = await make_tenant()
    h = bearer(t.admin_key.secret)
    up = await http.post("/v1/uploads", params={"name": "log.txt"}, content=b"a log line " * 50,
                         headers=h)
    assert up.status_code == 201, up.text
    opened = await http.post("/v1/tickets", headers=h, json={
        "subject": "Printer on fire", "body": "see the log",
        "requester": {"email": "files@example.com"}, "attachments": [up.json()["id"]]})
    assert opened.status_code == 201, opened.text
    run = cli(db, "verify", "--tenant", str(t.tenant_id), "--files", "--quiet")
    assert run.returncode == 0, run.stderr
    report = orjson.loads(run.stdout)
    assert report["ok"] and report["files"] == {"checked": 1, "erased": 0, "bad": []}
    # A superuser alters the stored chunk: the chain is intact, the file is not.
    await _tamper(db, "UPDATE file_chunks SET data = set_byte(data, 30, "
                      "get_byte(data, 30) # 255)")
    run = cli(db, "verify", "--tenant", str(t.tenant_id), "--files", "--quiet")
    assert run.returncode == 1, run.stderr
    report = orjson.loads(run.stdout)
    assert report["first_bad_seq"] is None and not report["ok"]
    assert len(report["files"]["bad"]) == 1
    assert cli(db, "verify", "--file", "x.jsonl", "--files").returncode == 2
