"""Where files are kept, in both storages (Postgres rows, a directory): no plaintext
byte of a file is ever in a superuser's ``pg_dump`` or in the directory; the contact's
export lists the files and a download gives them back; after the contact's erasure
nothing of them is left, the download is 410 and the chain still verifies;
``helpdesk audit verify --files`` finds a chunk altered; ``uploads.purge`` removes
unattached uploads a day on (on an injected clock); a storage directory that is gone
is a fast 503 for uploads and downloads only."""

from __future__ import annotations

import hashlib
import os
import shutil
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path

import asyncpg
import pytest

from api.app import create_app
from api.root import job_registry
from domain.clock import ManualClock
from handlers.attachments import verify_files
from scheduler.queue import Queue
from scheduler.registry import JobContext
from scheduler.uploads import purge_uploads
from tests.e2e.conftest import NEW_TICKET, app_settings, asgi_client, auth
from tests.support.dump import dump

EMAIL = "erin.files@example.com"
CHUNK = 256 * 1024


@pytest.fixture(params=["postgres", "filesystem"])
def storage(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[str, Path]:
    return request.param, tmp_path / "files"


def _windows(data: bytes) -> list[bytes]:
    """Stretches of the file any leak would show (start, a chunk's edge, the end)."""
    return [data[:48], data[CHUNK - 24:CHUNK + 24], data[-48:], data[1000:1048]]


def _directory_holds(root: Path, pieces: list[bytes]) -> bool:
    for path in root.rglob("*"):
        if path.is_file():
            held = path.read_bytes()
            if any(p in held for p in pieces):
                return True
    return False


async def test_files_are_sealed_at_rest_and_erasure_leaves_no_byte_of_them(db, tenant,
                                                                             storage, tmp_path):
    kind, root = storage
    root.mkdir()
    settings = app_settings(db, file_storage=kind, file_storage_dir=root)
    app = create_app(settings)
    data = os.urandom(CHUNK + 5000)
    async with asgi_client(app) as http:
        h = auth(tenant.admin_key)
        opened = await http.post("/v1/tickets", headers=h, json=NEW_TICKET | {
            "requester": {"email": EMAIL, "name": "Erin"}})
        ticket, contact = opened.json()["id"], opened.json()["requester"]["contact_id"]
        ids = []
        for n in range(2):  # the same bytes twice: both uploads share the contact's blob
            up = await http.post("/v1/uploads", params={"name": f"erin-passport-{n}.bin"},
                                 content=data, headers=h)
            assert up.status_code == 201, up.text
            r = await http.post(f"/v1/tickets/{ticket}/messages", headers=h,
                                json={"body": "the scan", "attachments": [up.json()["id"]]})
            assert r.status_code == 201, r.text
            ids.append(up.json()["id"])
        owner = await asyncpg.connect(db.admin_url)
        try:
            held = await owner.fetch("SELECT DISTINCT blob_id FROM uploads")
            assert len(held) == 1
            # The second upload's own blob is sealed to the contact too, till purged.
            blobs = await owner.fetch("SELECT id, storage, subject_id FROM file_blobs "
                                      "ORDER BY created_at")
            assert [(b["storage"], str(b["subject_id"])) for b in blobs] == [(kind, contact)] * 2
            assert blobs[0]["id"] == held[0]["blob_id"]
            chunk_rows = await owner.fetchval("SELECT count(*) FROM file_chunks")
            assert chunk_rows == (4 if kind == "postgres" else 0)
            if kind == "filesystem":
                # Two sealed chunks, each with its tag: nothing but ciphertext.
                assert (root / str(tenant.tenant_id) / str(blobs[0]["id"])
                        ).stat().st_size == len(data) + 2 * 16
        finally:
            await owner.close()
        pieces = _windows(data)
        before = dump(db.admin_url)
        assert not any(p in before for p in pieces), "a file's plaintext is in the dump"
        assert not _directory_holds(root, pieces)

        exported = (await http.get(f"/v1/contacts/{contact}/export", headers=h)).json()
        assert [a["id"] for a in exported["attachments"]] == ids
        assert {a["sha256"] for a in exported["attachments"]} == {
            hashlib.sha256(data).hexdigest()}
        for upload_id in ids:
            assert (await http.get(f"/v1/attachments/{upload_id}", headers=h)).content == data
        services = app.state.services
        digest = hashlib.sha256(data).hexdigest()
        check = await verify_files(services.store, services.files, tenant.tenant_id,
                                   {uuid.UUID(i): digest for i in ids})
        assert (check.checked, check.erased, check.bad) == (2, 0, [])

        erased = await http.post(f"/v1/contacts/{contact}/erase", headers=h,
                                 json={"reason": "asked"})
        assert erased.status_code == 200, erased.text
        assert erased.json()["files"] == 2
        after = dump(db.admin_url)
        assert not any(p in after for p in pieces)
        # The files' names went too: sealed in the events, blanked in the rows.
        assert b"erin-passport" in before and b"erin-passport" not in after
        history = (await http.get(f"/v1/tickets/{ticket}/history", headers=h)).json()
        names = [a["name"] for e in history["data"] for a in e["data"].get("attachments", [])]
        assert names == [{"erased": True}] * 2
        listed = (await http.get(f"/v1/tickets/{ticket}", headers=h)).json()["attachments"]
        assert [(a["id"], a["name"]) for a in listed] == [(i, "") for i in ids]
        replayed = await http.get(f"/v1/tickets/{ticket}/as-of", headers=h,
                                  params={"at": "9999-01-01T00:00:00Z"})
        assert replayed.json()["attachments"] == listed
        owner = await asyncpg.connect(db.admin_url)
        try:
            assert await owner.fetchval("SELECT count(*) FROM file_blobs") == 0
            assert await owner.fetchval("SELECT count(*) FROM file_chunks") == 0
            names = await owner.fetch("SELECT name, blob_id FROM uploads")
            assert [(n["name"], n["blob_id"]) for n in names] == [("", None), ("", None)]
            stored = await owner.fetch("SELECT attachments::text AS a FROM messages "
                                       "WHERE attachments IS NOT NULL")
            assert stored and all("passport" not in r["a"] for r in stored)
        finally:
            await owner.close()
        assert not [p for p in root.rglob("*") if p.is_file()]
        gone = await http.get(f"/v1/attachments/{ids[0]}", headers=h)
        assert (gone.status_code, gone.json()["code"]) == (410, "attachment_erased")
        verify = (await http.get("/v1/audit/verify", headers=h)).json()
        assert verify["ok"] is True, verify


async def test_verify_files_finds_an_altered_chunk(db, tenant):
    settings = app_settings(db)
    app = create_app(settings)
    data = os.urandom(3000)
    async with asgi_client(app) as http:
        h = auth(tenant.admin_key)
        up = (await http.post("/v1/uploads", params={"name": "a.bin"}, content=data,
                              headers=h)).json()
        opened = await http.post("/v1/tickets", headers=h,
                                 json=NEW_TICKET | {"attachments": [up["id"]]})
        assert opened.status_code == 201, opened.text
        services = app.state.services
        recorded = {uuid.UUID(up["id"]): up["sha256"]}
        ok = await verify_files(services.store, services.files, tenant.tenant_id, recorded)
        assert (ok.checked, ok.bad) == (1, [])
        owner = await asyncpg.connect(db.admin_url)
        try:
            # A superuser flips one byte of the sealed chunk.
            await owner.execute("UPDATE file_chunks SET data = set_byte(data, 20, "
                                "get_byte(data, 20) # 255)")
        finally:
            await owner.close()
        bad = await verify_files(services.store, services.files, tenant.tenant_id, recorded)
        assert len(bad.bad) == 1
        lied = await verify_files(services.store, services.files, tenant.tenant_id,
                                  {uuid.UUID(up["id"]): "0" * 64})
        assert up["id"] in lied.bad


async def test_the_purge_job_removes_unattached_uploads_a_day_on(db, tenant, tmp_path):
    root = tmp_path / "files"
    root.mkdir()
    settings = app_settings(db, file_storage="filesystem", file_storage_dir=root)
    clock = ManualClock(datetime.now(UTC))
    app = create_app(settings, clock=clock)
    async with asgi_client(app) as http:
        h = auth(tenant.admin_key)
        kept = (await http.post("/v1/uploads", params={"name": "k.txt"}, content=b"kept",
                                headers=h)).json()
        left = (await http.post("/v1/uploads", params={"name": "l.txt"}, content=b"left",
                                headers=h)).json()
        r = await http.post("/v1/tickets", headers=h,
                            json=NEW_TICKET | {"attachments": [kept["id"]]})
        assert r.status_code == 201, r.text
        services = app.state.services
        assert "uploads.purge" in job_registry(settings).periods
        ctx = JobContext(store=services.store, pool=services.pool, clock=clock,
                         queue=Queue(services.pool, "test"))
        clock.advance(hours=23)
        assert await purge_uploads(ctx, tenant.tenant_id, root) == (0, 0)
        assert len([p for p in root.rglob("*") if p.is_file()]) == 2
        clock.advance(hours=2)
        assert await purge_uploads(ctx, tenant.tenant_id, root) == (1, 1)
        assert (await http.get(f"/v1/attachments/{left['id']}", headers=h)).status_code == 404
        assert (await http.get(f"/v1/attachments/{kept['id']}", headers=h)).content == b"kept"
        assert len([p for p in root.rglob("*") if p.is_file()]) == 1
        # A file no row names any more (its row went, its file could not) goes too.
        stray = root / str(tenant.tenant_id) / str(uuid.uuid4())
        stray.write_bytes(b"ciphertext")
        assert await purge_uploads(ctx, tenant.tenant_id, root) == (0, 0)
        assert not stray.exists()


async def test_a_storage_directory_that_is_gone_is_a_fast_503_for_files_only(db, tenant,
                                                                            tmp_path):
    root = tmp_path / "files"
    root.mkdir()
    settings = app_settings(db, file_storage="filesystem", file_storage_dir=root)
    async with asgi_client(create_app(settings)) as http:
        h = auth(tenant.admin_key)
        up = (await http.post("/v1/uploads", params={"name": "a.txt"}, content=b"abc",
                              headers=h)).json()
        ticket = (await http.post("/v1/tickets", headers=h,
                                  json=NEW_TICKET | {"attachments": [up["id"]]})).json()["id"]
        ready = (await http.get("/health/ready")).json()["checks"]["file_storage"]
        assert ready["status"] == "ok"
        shutil.rmtree(root)
        ready = await http.get("/health/ready")
        assert ready.status_code == 200  # degraded, never failing: files only need it
        assert ready.json()["checks"]["file_storage"]["status"] == "degraded"
        started = time.monotonic()
        refused = await http.post("/v1/uploads", params={"name": "b.txt"}, content=b"x",
                                  headers=h)
        down = await http.get(f"/v1/attachments/{up['id']}", headers=h)
        assert time.monotonic() - started < 2
        for r in (refused, down):
            assert r.status_code == 503, r.text
            assert r.json()["code"] == "storage_unavailable" and r.headers["retry-after"] == "1"
        # A command without files does not need the storage at all.
        reply = await http.post(f"/v1/tickets/{ticket}/messages", headers=h,
                                json={"body": "still here"})
        assert reply.status_code == 201, reply.text
        assert (await http.get(f"/v1/tickets/{ticket}", headers=h)).status_code == 200
