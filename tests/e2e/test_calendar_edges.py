"""Dates and times at the edges of the calendar: a 400 naming the parameter when the
instant is outside the years 1 to 9999 in UTC, an honest answer when it is inside;
never a 500, on any endpoint, and the keep-alive connection stays open."""

from __future__ import annotations

import socket
import uuid
from typing import Any
from urllib.parse import urlencode, urlsplit

from api.app import create_app
from tests.e2e.conftest import NEW_TICKET, app_settings, auth
from tests.support.live import serve

OUTSIDE = ("0001-01-01T00:00:00+15:00", "9999-12-31T23:59:59-15:00",
           "0001-01-01T00:00:51+15:55")
"""Instants whose UTC reading is in year 0 or year 10000."""
INSIDE = ("0001-01-01T00:00:00Z", "0001-01-01T00:00:00-15:00", "9999-12-31T23:59:59Z",
          "9999-12-31T23:59:59.999999+00:00", "9999-12-31T08:59:59+15:00")


def _date_time_params(document: dict[str, Any]) -> list[tuple[str, str, str]]:
    out = []
    for path, operations in document["paths"].items():
        for method, operation in operations.items():
            for param in operation.get("parameters", []):
                options = param["schema"].get("anyOf", [param["schema"]])
                if param["in"] == "query" and any(o.get("format") == "date-time"
                                                  for o in options):
                    out.append((method.upper(), path, param["name"]))
    return out


async def test_instants_outside_the_calendar_are_400_naming_the_parameter(http, tenant):
    h = auth(tenant.admin_key)
    ticket = (await http.post("/v1/tickets", json=NEW_TICKET, headers=h)).json()
    group = (await http.post("/v1/groups", json={"name": "Billing"}, headers=h)).json()
    rule = (await http.post("/v1/rules", json={"name": "Tag", "actions": [
        {"type": "add_tags", "value": ["x"]}]}, headers=h)).json()
    document = (await http.get("/openapi.json")).json()
    params = _date_time_params(document)
    assert {("GET", "/v1/tickets", "created_after"), ("GET", "/v1/tickets", "created_before"),
            ("GET", "/v1/tickets/{ticket_id}/as-of", "at"), ("GET", "/v1/events", "after"),
            ("GET", "/v1/events", "before")} <= set(params)
    contact, org = ticket["requester"]["contact_id"], str(uuid.uuid4())
    for method, path, name in params:
        url = (path.replace("{ticket_id}", ticket["id"]).replace("{group_id}", group["id"])
               .replace("{field_key}", "plan").replace("{contact_id}", contact)
               .replace("{organization_id}", org).replace("{rule_id}", rule["id"])
               .replace("{calendar_id}", str(uuid.uuid4()))
               .replace("{policy_id}", str(uuid.uuid4()))
               .replace("{mailbox_id}", str(uuid.uuid4()))
               .replace("{macro_id}", str(uuid.uuid4()))
               .replace("{view_id}", str(uuid.uuid4())))
        for value in OUTSIDE:
            r = await http.request(method, url, params={name: value}, headers=h)
            assert r.status_code == 400, (path, name, value, r.text)
            body = r.json()
            assert body["code"] == "invalid_parameter" and f"query.{name}" in body["detail"]
            assert "years 1 to 9999" in body["detail"], body
        for value in INSIDE:
            r = await http.request(method, url, params={name: value}, headers=h)
            assert r.status_code in (200, 404), (path, name, value, r.text)


async def test_days_at_the_edges_of_the_calendar_are_answered(http, tenant):
    h = auth(tenant.admin_key)
    for path in ("/v1/analytics/summary", "/v1/analytics/volume", "/v1/analytics/agents"):
        for lo, hi in (("0001-01-01", "0001-01-31"), ("9999-12-01", "9999-12-31")):
            r = await http.get(path, params={"from": lo, "to": hi}, headers=h)
            assert r.status_code == 200, (path, lo, hi, r.text)
            assert (r.json()["from"], r.json()["to"]) == (lo, hi)


def _exchange(sock: socket.socket, host: str, target: str, secret: str) -> tuple[int, bytes]:
    """One HTTP/1.1 request on an open socket; returns the status and the raw head."""
    sock.sendall(f"GET {target} HTTP/1.1\r\nHost: {host}\r\nAuthorization: Bearer {secret}\r\n"
                 "\r\n".encode())
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        assert chunk, "the server closed the connection"
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    length = next(int(line.split(b":", 1)[1]) for line in head.split(b"\r\n")
                  if line.lower().startswith(b"content-length:"))
    while len(body) < length:
        chunk = sock.recv(65536)
        assert chunk, "the server closed the connection mid-body"
        body += chunk
    return int(head.split(b" ", 2)[1]), head


def test_the_keep_alive_connection_survives_an_edge_date(db, tenant):
    app = create_app(app_settings(db))
    with serve(app) as url:
        where = urlsplit(url)
        assert where.hostname is not None and where.port is not None
        with socket.create_connection((where.hostname, where.port), timeout=10) as sock:
            host = f"{where.hostname}:{where.port}"
            for value in OUTSIDE:
                target = "/v1/tickets?" + urlencode({"created_before": value})
                status, head = _exchange(sock, host, target, tenant.admin_key.secret)
                assert status == 400, head
                assert b"connection: close" not in head.lower()
            status, _ = _exchange(sock, host, "/v1/tickets", tenant.admin_key.secret)
            assert status == 200
