"""Files over HTTP: upload, attach, download and hash round trips for staff, portal
and widget, isolation between tenants and customers (the app runs as the runtime role,
so row-level security answers), the download's headers and ranges, the bad-input list,
and that a failed command or a cut-off upload attaches nothing."""

from __future__ import annotations

import hashlib
import os
import uuid

import asyncpg
import httpx

from tests.e2e.conftest import NEW_TICKET, auth
from tests.support.customers import portal_headers, widget_headers

PNG = b"\x89PNG\r\n\x1a\n" + os.urandom(2000)
CHUNK = 256 * 1024


async def _upload(http: httpx.AsyncClient, h: dict[str, str], data: bytes, name: str,
                  content_type: str = "application/octet-stream", prefix: str = "/v1"
                  ) -> httpx.Response:
    return await http.post(f"{prefix}/uploads", params={"name": name}, content=data,
                           headers=h | {"Content-Type": content_type})


async def _ticket(http: httpx.AsyncClient, h: dict[str, str], **extra: object) -> str:
    opened = await http.post("/v1/tickets", headers=h, json=NEW_TICKET | extra)
    assert opened.status_code == 201, opened.text
    return str(opened.json()["id"])


async def test_staff_upload_attach_and_download_round_trip(http, tenant):
    h = auth(tenant.admin_key)
    up = await _upload(http, h, PNG, "screen shot.png", "image/png")
    assert up.status_code == 201, up.text
    upload = up.json()
    assert upload["sha256"] == hashlib.sha256(PNG).hexdigest()
    assert (upload["size"], upload["type"], upload["name"]) == (len(PNG), "image/png",
                                                               "screen shot.png")
    ticket = await _ticket(http, h)
    posted = await http.post(f"/v1/tickets/{ticket}/messages", headers=h,
                             json={"body": "the screen", "attachments": [upload["id"]]})
    assert posted.status_code == 201, posted.text
    ref = {k: upload[k] for k in ("id", "name", "size", "type", "sha256")}
    assert posted.json()["message"]["attachments"] == [ref]
    listed = (await http.get(f"/v1/tickets/{ticket}/messages", headers=h)).json()["data"]
    assert [m["attachments"] for m in listed] == [[], [ref]]
    # The ticket lists its messages' files, as of any version as now.
    on_ticket = [ref | {"message_id": posted.json()["message"]["id"]}]
    assert posted.json()["ticket"]["attachments"] == on_ticket
    one = await http.get(f"/v1/tickets/{ticket}", headers=h)
    assert one.json()["attachments"] == on_ticket
    [row] = [t for t in (await http.get("/v1/tickets", headers=h)).json()["data"]
             if t["id"] == ticket]
    assert row == one.json()
    now = await http.get(f"/v1/tickets/{ticket}/as-of", headers=h,
                         params={"version": one.json()["version"]})
    assert now.json() == one.json()
    first = await http.get(f"/v1/tickets/{ticket}/as-of", headers=h, params={"version": 1})
    assert first.json()["attachments"] == []

    got = await http.get(f"/v1/attachments/{upload['id']}", headers=h)
    assert got.status_code == 200 and got.content == PNG
    assert got.headers["content-type"] == "image/png"
    assert got.headers["x-content-type-options"] == "nosniff"
    assert got.headers["etag"] == f'"{upload["sha256"]}"'
    assert got.headers["content-disposition"] == (
        "attachment; filename=\"screen_shot.png\"; filename*=UTF-8''screen%20shot.png")
    inline = await http.get(f"/v1/attachments/{upload['id']}",
                            params={"disposition": "inline"}, headers=h)
    assert inline.headers["content-disposition"].startswith("inline;")
    again = await http.get(f"/v1/attachments/{upload['id']}",
                           headers=h | {"If-None-Match": got.headers["etag"]})
    assert again.status_code == 304 and again.content == b""
    part = await http.get(f"/v1/attachments/{upload['id']}", headers=h | {"Range": "bytes=8-99"})
    assert part.status_code == 206 and part.content == PNG[8:100]
    assert part.headers["content-range"] == f"bytes 8-99/{len(PNG)}"
    tail = await http.get(f"/v1/attachments/{upload['id']}", headers=h | {"Range": "bytes=-10"})
    assert tail.content == PNG[-10:]
    beyond = await http.get(f"/v1/attachments/{upload['id']}",
                            headers=h | {"Range": f"bytes={len(PNG)}-"})
    assert beyond.status_code == 416 and beyond.headers["content-range"] == f"bytes */{len(PNG)}"

    # The event carries the file's identity (so the chain does), the bytes never.
    history = (await http.get(f"/v1/tickets/{ticket}/history", headers=h)).json()["data"]
    added = [e for e in history if e["type"] == "MessageAdded"]
    assert added[0]["data"]["attachments"] == [ref]
    changes = (await http.get("/v1/changes", headers=h)).json()
    assert ref in [a for c in changes["data"] for a in c.get("data", {}).get("attachments", [])]
    assert (await http.get("/v1/audit/verify", headers=h)).json()["ok"] is True


async def test_a_ticket_opens_with_files_and_a_multipart_upload_spans_chunks(http, tenant):
    h = auth(tenant.admin_key)
    data = os.urandom(2 * CHUNK + 1234)
    up = await http.post("/v1/uploads", headers=h,
                         files={"file": ("logs.bin", data, "application/octet-stream")},
                         data={"note": "ignored"})
    assert up.status_code == 201, up.text
    upload = up.json()
    assert upload["sha256"] == hashlib.sha256(data).hexdigest() and upload["size"] == len(data)
    opened = await http.post("/v1/tickets", headers=h,
                             json=NEW_TICKET | {"attachments": [upload["id"]]})
    assert opened.status_code == 201, opened.text
    messages = (await http.get(f"/v1/tickets/{opened.json()['id']}/messages",
                               headers=h)).json()["data"]
    assert [a["id"] for a in messages[0]["attachments"]] == [upload["id"]]
    whole = await http.get(f"/v1/attachments/{upload['id']}", headers=h)
    assert whole.content == data
    assert whole.headers["content-type"] == "application/octet-stream"
    across = await http.get(f"/v1/attachments/{upload['id']}",
                            headers=h | {"Range": f"bytes={CHUNK - 5}-{2 * CHUNK + 5}"})
    assert across.status_code == 206 and across.content == data[CHUNK - 5:2 * CHUNK + 6]


async def test_bad_input_is_a_clear_4xx_and_keeps_nothing(http, tenant, make_tenant, db):
    h = auth(tenant.admin_key)
    cases = [
        (b"", "empty.txt", "text/plain", 422, "empty_file"),
        (b"x", "../etc/passwd", "text/plain", 422, "invalid_file_name"),
        (b"x", "a\\b.txt", "text/plain", 422, "invalid_file_name"),
        (b"x", "bell\x07.txt", "text/plain", 422, "invalid_file_name"),
        (b"x", "invoice\u202egnp.exe", "text/plain", 422, "invalid_file_name"),
        (b"x", "n" * 1000, "text/plain", 422, "invalid_file_name"),
        (b"just text, no image", "fake.png", "image/png", 422, "type_mismatch"),
        (PNG, "real.txt", "text/plain", 422, "type_mismatch"),
        (b"x", "odd.bin", "not a type", 422, "invalid_content_type"),
    ]
    for data, name, content_type, status, code in cases:
        r = await _upload(http, h, data, name, content_type)
        assert (r.status_code, r.json()["code"]) == (status, code), (name, r.text)
        assert r.headers["content-type"] == "application/problem+json"
    raw_without_name = await http.post("/v1/uploads", content=b"x", headers=h)
    assert raw_without_name.status_code == 422
    cut = await http.post("/v1/uploads", headers=h | {
        "Content-Type": "multipart/form-data; boundary=xyz"},
        content=b'--xyz\r\nContent-Disposition: form-data; name="file"; filename="a.bin"\r\n'
                b"\r\nhalf of a file")
    assert (cut.status_code, cut.json()["code"]) == (400, "invalid_multipart")
    admin = await asyncpg.connect(db.admin_url)
    try:
        assert await admin.fetchval("SELECT count(*) FROM uploads") == 0
        assert await admin.fetchval("SELECT count(*) FROM file_blobs") == 0
        assert await admin.fetchval("SELECT count(*) FROM file_chunks") == 0
    finally:
        await admin.close()

    ticket = await _ticket(http, h)
    one = (await _upload(http, h, b"hello", "a.txt", "text/plain")).json()
    twice = await http.post(f"/v1/tickets/{ticket}/messages", headers=h,
                            json={"body": "x", "attachments": [one["id"], one["id"]]})
    assert (twice.status_code, twice.json()["code"]) == (422, "duplicate_attachment")
    unknown = await http.post(f"/v1/tickets/{ticket}/messages", headers=h,
                              json={"body": "x", "attachments": [str(uuid.uuid4())]})
    assert (unknown.status_code, unknown.json()["code"]) == (404, "upload_not_found")
    other = await make_tenant("Other")
    foreign = (await _upload(http, auth(other.admin_key), b"theirs", "t.txt",
                             "text/plain")).json()
    stolen = await http.post(f"/v1/tickets/{ticket}/messages", headers=h,
                             json={"body": "x", "attachments": [foreign["id"]]})
    assert (stolen.status_code, stolen.json()["code"]) == (404, "upload_not_found")
    assert (await http.get(f"/v1/attachments/{foreign['id']}", headers=h)).status_code == 404
    ok = await http.post(f"/v1/tickets/{ticket}/messages", headers=h,
                         json={"body": "x", "attachments": [one["id"]]})
    assert ok.status_code == 201, ok.text
    again = await http.post(f"/v1/tickets/{ticket}/messages", headers=h,
                            json={"body": "y", "attachments": [one["id"]]})
    assert (again.status_code, again.json()["code"]) == (409, "upload_attached")

    svg = (await _upload(http, h, b"<svg xmlns='http://www.w3.org/2000/svg'/>", "x.svg",
                         "image/svg+xml")).json()
    assert svg["type"] == "image/svg+xml"
    inline = await http.get(f"/v1/attachments/{svg['id']}", params={"disposition": "inline"},
                            headers=h)
    assert (inline.status_code, inline.json()["code"]) == (422, "not_inline")
    plain = await http.get(f"/v1/attachments/{svg['id']}", headers=h)
    assert plain.headers["content-type"] == "application/octet-stream"
    assert plain.headers["content-disposition"].startswith("attachment;")

    settings = (await http.get("/v1/settings", headers=h)).json()
    put = await http.put("/v1/settings", headers=h, json=settings | {
        "attachments": {"max_file_bytes": 1000, "per_message": 1}})
    assert put.status_code == 200, put.text
    big = await _upload(http, h, os.urandom(1500), "big.bin")
    assert (big.status_code, big.json()["code"]) == (413, "file_too_large")
    assert big.json()["limit"] == "attachments.max_file_bytes"
    a, b = [(await _upload(http, h, os.urandom(10), f"{n}.bin")).json()["id"] for n in "ab"]
    many = await http.post(f"/v1/tickets/{ticket}/messages", headers=h,
                           json={"body": "x", "attachments": [a, b]})
    assert (many.status_code, many.json()["code"]) == (422, "too_many_attachments")
    assert "attachments.per_message" in many.json()["detail"]


async def test_a_refused_command_leaves_its_files_unattached(http, tenant):
    h = auth(tenant.admin_key)
    ticket = await _ticket(http, h)
    for state in ("solved", "closed"):
        r = await http.post(f"/v1/tickets/{ticket}/state", headers=h, json={"state": state})
        assert r.status_code == 200, r.text
    upload = (await _upload(http, h, b"notes", "n.txt", "text/plain")).json()
    refused = await http.post(f"/v1/tickets/{ticket}/messages", headers=h,
                              json={"body": "late", "attachments": [upload["id"]]})
    assert refused.status_code == 409, refused.text
    # Still the caller's own unattached upload, and still attachable.
    assert (await http.get(f"/v1/attachments/{upload['id']}", headers=h)).content == b"notes"
    other = await _ticket(http, h)
    done = await http.post(f"/v1/tickets/{other}/messages", headers=h,
                           json={"body": "here", "attachments": [upload["id"]]})
    assert done.status_code == 201, done.text


async def test_customers_round_trip_their_files_and_see_no_one_elses(http, tenant, make_tenant,
                                                                     owner):
    admin = auth(tenant.admin_key)
    agent = auth(await owner.key(tenant.tenant_id, "agent", await owner.agent(tenant.tenant_id)))
    ann = await portal_headers(http, admin, "ann@example.com")
    bob = await portal_headers(http, admin, "bob@example.com")

    # Ann uploads and opens a ticket with it; a reply carries another.
    first = await _upload(http, ann, PNG, "ann.png", "image/png", prefix="/v1/portal")
    assert first.status_code == 201, first.text
    opened = await http.post("/v1/portal/tickets", headers=ann, json={
        "subject": "Broken", "body": "see file", "attachments": [first.json()["id"]]})
    assert opened.status_code == 201, opened.text
    ticket = opened.json()["id"]
    second = (await _upload(http, ann, b"log line", "log.txt", "text/plain",
                            prefix="/v1/portal")).json()
    # Bob cannot attach Ann's upload, nor download it.
    bobs = await http.post("/v1/portal/tickets", headers=bob, json={
        "subject": "Mine", "body": "x", "attachments": [second["id"]]})
    assert (bobs.status_code, bobs.json()["code"]) == (404, "upload_not_found")
    reply = await http.post(f"/v1/portal/tickets/{ticket}/messages", headers=ann,
                            json={"body": "and the log", "attachments": [second["id"]]})
    assert reply.status_code == 201, reply.text
    assert [a["id"] for a in reply.json()["message"]["attachments"]] == [second["id"]]

    # Staff answer publicly with a file, and note another internally.
    public = (await _upload(http, agent, b"fix steps", "fix.txt", "text/plain")).json()
    note = (await _upload(http, agent, b"internal", "note.txt", "text/plain")).json()
    for upload, visibility in ((public, "public"), (note, "internal")):
        r = await http.post(f"/v1/tickets/{ticket}/messages", headers=agent, json={
            "body": "x", "visibility": visibility, "attachments": [upload["id"]]})
        assert r.status_code == 201, r.text
    staff_sees = await http.get(f"/v1/attachments/{first.json()['id']}", headers=agent)
    assert staff_sees.content == PNG

    messages = (await http.get(f"/v1/portal/tickets/{ticket}/messages",
                               headers=ann)).json()["data"]
    files = [a["id"] for m in messages for a in m["attachments"]]
    assert files == [first.json()["id"], second["id"], public["id"]]
    for upload_id, data in ((first.json()["id"], PNG), (second["id"], b"log line"),
                            (public["id"], b"fix steps")):
        got = await http.get(f"/v1/portal/attachments/{upload_id}", headers=ann)
        assert got.status_code == 200 and got.content == data
        assert hashlib.sha256(got.content).hexdigest() == got.headers["etag"].strip('"')
        assert (await http.get(f"/v1/portal/attachments/{upload_id}",
                               headers=bob)).status_code == 404
    assert (await http.get(f"/v1/portal/attachments/{note['id']}",
                           headers=ann)).status_code == 404

    # A widget session: its own ticket's files only.
    tenant_id, visitor = await widget_headers(http, admin)
    _, stranger = await widget_headers(http, admin)
    base = f"/v1/widget/{tenant_id}"
    w = await _upload(http, visitor, b"widget file", "w.txt", "text/plain", prefix=base)
    assert w.status_code == 201, w.text
    wt = await http.post(f"{base}/tickets", headers=visitor, json={
        "subject": "Chat", "body": "hi", "attachments": [w.json()["id"]]})
    assert wt.status_code == 201, wt.text
    assert (await http.get(f"{base}/attachments/{w.json()['id']}",
                           headers=visitor)).content == b"widget file"
    assert (await http.get(f"{base}/attachments/{w.json()['id']}",
                           headers=stranger)).status_code == 404
    assert (await http.get(f"{base}/attachments/{first.json()['id']}",
                           headers=visitor)).status_code == 404
    wr = await http.post(f"{base}/tickets/{wt.json()['id']}/messages", headers=stranger,
                         json={"body": "x"})
    assert wr.status_code == 404

    # Another tenant sees none of it.
    other = auth((await make_tenant("Elsewhere")).admin_key)
    for upload_id in (first.json()["id"], public["id"], w.json()["id"]):
        assert (await http.get(f"/v1/attachments/{upload_id}", headers=other)).status_code == 404
    # An intake key uploads and posts for the customer.
    intake = auth(await owner.key(tenant.tenant_id, "intake"))
    i = (await _upload(http, intake, b"by intake", "i.txt", "text/plain")).json()
    r = await http.post(f"/v1/tickets/{ticket}/messages", headers=intake,
                        json={"body": "from mail", "attachments": [i["id"]]})
    assert r.status_code == 201, r.text
    assert (await http.get(f"/v1/portal/attachments/{i['id']}", headers=ann)).content == \
        b"by intake"
