"""A tenant moved between two Postgres servers with ``helpdesk tenant export`` and
``import``: the shared test server and an embedded one this test starts.

One test walks the documented cut-over (docs/operations.md, "Moving a tenant"): writes
paused (503 with ``Retry-After``, reads served), export, import, writes let go on at the
target. The target has a key-encryption key of its own, so a sealed field that opens
there was wrapped anew; its answers must be the source's, byte for byte.
"""

from __future__ import annotations

import io
import json
import shutil
import tempfile
from datetime import UTC, datetime
from pathlib import Path

import asyncpg
import orjson
import pytest

from api.app import create_app
from api.cli import embedded
from api.cli.audit import verify_tenant
from api.cli.tenant import export_tenant, import_tenant, set_read_only, transport_keyring
from api.config import ProcessSettings
from eventstore.keys import Keyring
from eventstore.pool import create_pool
from handlers import tenant_move
from handlers.tenant_move import MoveRefused, rebuild_projections
from handlers.tenants import NewTenant
from migrations.runner import migrate
from projections.projector import Projector
from tests.e2e.conftest import NEW_TICKET, app_settings, auth
from tests.support import pg
from tests.support.http import asgi_client
from tests.support.pg import embedded_server

pytestmark = pytest.mark.slow

PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 8


@pytest.fixture
def settings(db: pg.TestDatabase, tmp_path: Path) -> ProcessSettings:
    """The source keeps files in a directory; the target (no directory) in Postgres, so
    the file's sealed chunks move from one storage to the other."""
    (tmp_path / "files").mkdir()
    return app_settings(db, file_storage="filesystem", file_storage_dir=tmp_path / "files")


def _settings(runtime_url: str) -> ProcessSettings:
    return ProcessSettings(_env_file=None, database_url=runtime_url,  # type: ignore[call-arg]
                           max_body_bytes=65_536, db_pool_min=1,
                           password_hash_memory_kib=1024, password_hash_time_cost=1)


async def test_a_tenant_moves_to_another_server_with_its_chain_and_sealed_data(
        http, tenant, settings, db, services, monkeypatch) -> None:
    # Events go in three a statement, so the chain's check links statements too.
    monkeypatch.setattr(tenant_move, "EVENT_BATCH", 3)
    h = auth(tenant.admin_key)
    up = await http.post("/v1/uploads", params={"name": "screen.png"}, content=PNG,
                         headers=h | {"Content-Type": "image/png"})
    assert up.status_code == 201, up.text
    assert settings.file_storage_dir is not None
    assert len(list((settings.file_storage_dir / str(tenant.tenant_id)).iterdir())) == 1
    opened = await http.post("/v1/tickets", headers=h, json=NEW_TICKET | {
        "attachments": [up.json()["id"]]})
    assert opened.status_code == 201, opened.text
    ticket, contact = opened.json()["id"], opened.json()["requester"]["contact_id"]
    r = await http.post(f"/v1/tickets/{ticket}/messages", headers=h,
                        json={"body": "on our way", "visibility": "public"})
    assert r.status_code == 201, r.text
    gone = await http.post("/v1/tickets", headers=h, json=NEW_TICKET | {
        "subject": "Forget me", "requester": {"email": "erin@example.com", "name": "Erin"}})
    assert gone.status_code == 201, gone.text
    erased_ticket, erased = gone.json()["id"], gone.json()["requester"]["contact_id"]
    r = await http.post(f"/v1/contacts/{erased}/erase", headers=h, json={"reason": "asked"})
    assert r.status_code == 200, r.text

    # Writes paused: refused with 503 and the operator's Retry-After; reads served.
    await set_read_only(db.admin_url, tenant.tenant_id, 120)
    refused = await http.post(f"/v1/tickets/{ticket}/messages", headers=h,
                              json={"body": "too late", "visibility": "public"})
    assert refused.status_code == 503, refused.text
    assert refused.headers["content-type"].startswith("application/problem+json")
    assert refused.json()["code"] == "tenant_read_only"
    assert refused.headers["Retry-After"] == "120"
    # An upload appends no event, and is refused all the same (it would stay behind).
    late = await http.post("/v1/uploads", params={"name": "late.png"}, content=PNG,
                           headers=h | {"Content-Type": "image/png"})
    assert late.status_code == 503 and late.json()["code"] == "tenant_read_only", late.text
    assert (await http.get(f"/v1/tickets/{ticket}", headers=h)).status_code == 200

    # The source's analytics as a running worker leaves them: caught up.
    projector = Projector(services.pool)
    await projector.ensure_checkpoints()
    await projector.drain(tenant_id=tenant.tenant_id)
    today = datetime.now(UTC).date().isoformat()
    paths = [f"/v1/tickets/{ticket}", f"/v1/tickets/{ticket}/messages",
             f"/v1/tickets/{ticket}/history", f"/v1/tickets/{erased_ticket}/history",
             f"/v1/tickets/{erased_ticket}", "/v1/tickets", f"/v1/contacts/{contact}",
             f"/v1/contacts/{erased}", f"/v1/contacts/{contact}/export",
             f"/v1/attachments/{up.json()['id']}", "/v1/audit/verify",
             f"/v1/analytics/summary?from={today}&to={today}",
             f"/v1/analytics/volume?from={today}&to={today}"]
    before: dict[str, bytes] = {}
    for path in paths:
        got = await http.get(path, headers=h)
        assert got.status_code == 200, (path, got.text)
        before[path] = got.content
    assert b"ann@example.com" in before[f"/v1/tickets/{ticket}/history"]
    assert b"erin@example.com" not in before[f"/v1/tickets/{erased_ticket}/history"]

    transport = transport_keyring("a transport key for the move")
    out = io.BytesIO()
    events, _ = await export_tenant(db.admin_url, settings, tenant.tenant_id, out, transport)
    source_chain = await pg.event_chain(db.admin_url, tenant.tenant_id)
    assert events == len(source_chain) > 5
    # Nothing the tenant's people said or are called can be read from the file: the
    # events travel as stored (their personal fields sealed) and the rows, which hold
    # them as text, sealed by a key the transport key wraps. (None of these has a
    # character of base64 or hex, so no ciphertext can hold one by chance.)
    assert b"ann@example.com" in before[f"/v1/contacts/{contact}"]
    for said in (b"ann@example.com", b'"Ann"', b"Printer on fire", b"really on fire",
                 b"on our way", b"screen.png", b"erin@example.com"):
        assert said not in out.getvalue(), said

    # Outside pytest's own (private) temporary directory, where the server's system
    # user can reach it (as tests/e2e/test_postgres_down.py does).
    data_dir = Path(tempfile.mkdtemp(prefix="helpdesk-move-"))
    try:
        await _move(out.getvalue(), paths, before, tenant, settings, data_dir, transport,
                    source_chain)
    finally:
        shutil.rmtree(data_dir, ignore_errors=True)


async def _move(export: bytes, paths: list[str], before: dict[str, bytes], tenant: NewTenant,
                settings: ProcessSettings, data_dir: Path, transport: Keyring,
                source_chain: list[tuple[int, bytes]]) -> None:
    h = auth(tenant.admin_key)
    events = len(source_chain)
    ticket = paths[0].rsplit("/", 1)[1]
    erased = paths[7].rsplit("/", 1)[1]
    async with embedded_server(data_dir) as urls:
        password = json.loads((data_dir / "credentials.json").read_text())["runtime_password"]
        await migrate(urls.owner_url, runtime_user=embedded.RUNTIME_USER,
                      runtime_password=password)
        target = _settings(urls.runtime_url)
        # An event altered in the file, in the first statement or a later one: the
        # trigger recomputes its hash and refuses it (line k + 1 holds seq k).
        for seq in (2, 5):
            lines = export.split(b"\n")
            altered = orjson.loads(lines[seq + 1])
            assert altered["seq"] == seq
            altered["data"] = {**altered["data"], "note": "added later"}
            lines[seq + 1] = orjson.dumps(altered)
            with pytest.raises(MoveRefused,
                               match=f"does not continue the chain at seq {seq}"):
                await import_tenant(urls.owner_url, target, io.BytesIO(b"\n".join(lines)),
                                    transport)
        # Sealed rows moved to another place in the file do not open there.
        lines = export.split(b"\n")
        sealed = [i for i, line in enumerate(lines) if b'"part":"rows"' in line]
        a, b = sealed[0], sealed[-1]
        lines[a], lines[b] = lines[b], lines[a]
        with pytest.raises(MoveRefused, match="the export was altered"):
            await import_tenant(urls.owner_url, target, io.BytesIO(b"\n".join(lines)),
                                transport)
        wrong = transport_keyring("another key")
        with pytest.raises(MoveRefused, match="transport key"):
            await import_tenant(urls.owner_url, target, io.BytesIO(export), wrong)
        done = await import_tenant(urls.owner_url, target, io.BytesIO(export),
                                   transport)
        assert (done.events, done.head_seq) == (events, source_chain[-1][0])
        with pytest.raises(MoveRefused, match="already"):
            await import_tenant(urls.owner_url, target, io.BytesIO(export), transport)

        assert await pg.event_chain(urls.owner_url, tenant.tenant_id) == source_chain
        for side in (settings, target):
            report = await verify_tenant(side, tenant.tenant_id, progress=False)
            assert report["ok"] is True and report["checked"] == events, report
        # Only the owner imports: the runtime role arming app.importing is refused.
        runtime = await asyncpg.connect(urls.runtime_url)
        try:
            async with runtime.transaction():
                await runtime.execute(
                    "SELECT set_config('app.tenant_id', $1, true), set_config("
                    "'app.actor_kind', 'agent', true), set_config('app.actor_id', 'x', true),"
                    " set_config('app.importing', 'on', true)", str(tenant.tenant_id))
                with pytest.raises(asyncpg.InsufficientPrivilegeError, match="only the owner"):
                    await runtime.execute(
                        "INSERT INTO events (tenant_id, seq, stream_id, version, type, data, "
                        "actor_kind, actor_id, recorded_at, hash) VALUES ($1, $2, "
                        "gen_random_uuid(), 1, 'TicketOpened', '{}', 'agent', 'x', now(), "
                        "'\\x00')", tenant.tenant_id, events + 1)
        finally:
            await runtime.close()
        # Imported rows skip the stamping row trigger (migration 0995), yet an owner's
        # import of a row of another tenant is still refused: by the tenant policy's
        # WITH CHECK, and behind it by the statement's chain check.
        owner = await asyncpg.connect(urls.owner_url)
        try:
            async with owner.transaction():
                await owner.execute("SET LOCAL ROLE helpdesk_owner")
                await owner.execute(
                    "SELECT set_config('app.tenant_id', $1, true),"
                    " set_config('app.importing', 'on', true)", str(tenant.tenant_id))
                with pytest.raises(asyncpg.InsufficientPrivilegeError):
                    await owner.execute(
                        "INSERT INTO events (tenant_id, seq, stream_id, version, type, data, "
                        "actor_kind, actor_id, recorded_at, hash) VALUES (gen_random_uuid(),"
                        " 1, gen_random_uuid(), 1, 'TicketOpened', '{}', 'agent', 'x', now(),"
                        " '\\x00')")
        finally:
            await owner.close()
        # Another key-encryption key there: the data keys were wrapped anew.
        kek = await _kek(settings), await _kek(target)
        assert kek[0] != kek[1]

        async with asgi_client(create_app(target)) as moved:
            for path in paths:
                got = await moved.get(path, headers=h)
                assert got.status_code == 200, (path, got.text)
                assert got.content == before[path], path
            # The analytics came as rows with their checkpoints; rebuilt from the events
            # there (``--rebuild``), they are the same.
            pool = await create_pool(urls.runtime_url, min_size=1, max_size=2)
            try:
                reached = await rebuild_projections(pool, tenant.tenant_id)
            finally:
                await pool.close()
            assert reached and set(reached.values()) == {events}, reached
            for path in paths[-2:]:
                got = await moved.get(path, headers=h)
                assert got.content == before[path], path
            # The pause came along; letting writes go on at the target takes them.
            still = await moved.post(f"/v1/tickets/{ticket}/messages", headers=h,
                                     json={"body": "moved", "visibility": "public"})
            assert still.status_code == 503 and still.headers["Retry-After"] == "120"
            await set_read_only(urls.owner_url, tenant.tenant_id, None)
            taken = await moved.post(f"/v1/tickets/{ticket}/messages", headers=h,
                                     json={"body": "moved", "visibility": "public"})
            assert taken.status_code == 201, taken.text
            erased_again = await moved.post(
                f"/v1/contacts/{erased}/erase", headers=h, json={"reason": "again"})
            assert erased_again.status_code == 410, erased_again.text
            after = await moved.get(f"/v1/tickets/{ticket}/history", headers=h)
            assert orjson.loads(after.content)["data"][-1]["seq"] == events + 1


async def _kek(side: ProcessSettings) -> set[str]:
    assert side.database_url
    conn = await asyncpg.connect(side.database_url)
    try:
        return {r["kek"] for r in await conn.fetch(
            "SELECT kek FROM data_key_census()")}
    finally:
        await conn.close()
