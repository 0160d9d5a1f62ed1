"""A client generated from the served document by ``openapi-python-client`` drives a
live server through a scripted flow: open a ticket with an ``Idempotency-Key`` (and
have it replayed), page the list, reply, change the state with ``If-Match`` from the
declared ``ETag``, and read the declared members of problems (412's
``current_version``, 422's ``errors``, 400's ``parameters``) as typed attributes.
Every parsed answer has nothing in ``additional_properties``: every member the
server sent is one the document declares."""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from api.app import create_app
from tests.e2e.conftest import app_settings
from tests.support import pg
from tests.support.contract import declared_headers
from tests.support.live import serve

pytestmark = pytest.mark.slow  # generates and imports a client package
PACKAGE = "helpdesk_generated"


@pytest.fixture
def generated(tmp_path: Path, db: pg.TestDatabase) -> Iterator[tuple[str, ModuleType, Any]]:
    app = create_app(app_settings(db))
    document = app.openapi()
    spec = tmp_path / "openapi.json"
    spec.write_text(json.dumps(document))
    bin_dir = Path(sys.executable).parent
    done = subprocess.run(
        [str(bin_dir / "openapi-python-client"), "generate", "--path", str(spec),
         "--meta", "none", "--output-path", str(tmp_path / PACKAGE)],
        capture_output=True, text=True, timeout=300, check=False, cwd=tmp_path,
        env={**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}"})
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Warning" not in done.stdout + done.stderr, done.stdout + done.stderr
    sys.path.insert(0, str(tmp_path))
    try:
        module = importlib.import_module(PACKAGE)
        with serve(app) as url:
            yield url, module, document
    finally:
        sys.path.remove(str(tmp_path))
        for name in [m for m in sys.modules if m == PACKAGE or m.startswith(PACKAGE + ".")]:
            del sys.modules[name]


def _untyped(value: Any, where: str = "") -> list[str]:
    """Where a parsed answer holds members its model does not declare."""
    found: list[str] = []
    extra = getattr(value, "additional_properties", None)
    if extra:
        found.append(f"{where or type(value).__name__}: {sorted(extra)}")
    if hasattr(value, "to_dict") and hasattr(value, "__attrs_attrs__"):
        for attribute in value.__attrs_attrs__:
            if attribute.name != "additional_properties":
                found += _untyped(getattr(value, attribute.name), f"{where}.{attribute.name}")
    elif isinstance(value, list):
        for i, item in enumerate(value):
            found += _untyped(item, f"{where}[{i}]")
    return found


def _api(module: ModuleType, name: str) -> Any:
    return importlib.import_module(f"{module.__name__}.{name}")


def test_a_generated_client_completes_a_scripted_flow(generated, tenant):
    url, client_package, document = generated
    models = _api(client_package, "models")
    open_ticket = _api(client_package, "api.tickets.open_ticket_v1_tickets_post")
    list_tickets = _api(client_package, "api.tickets.list_v1_tickets_get")
    set_state = _api(client_package, "api.tickets.set_state_v1_tickets_ticket_id_state_post")
    post_message = _api(client_package,
                        "api.messages.post_message_v1_tickets_ticket_id_messages_post")
    with client_package.AuthenticatedClient(base_url=url,
                                            token=tenant.admin_key.secret) as client:
        _flow(client, models, document, open_ticket, list_tickets, set_state, post_message)


def _flow(client: Any, models: Any, document: dict[str, Any], open_ticket: Any,
          list_tickets: Any, set_state: Any, post_message: Any) -> None:
    untyped: list[str] = []

    # Open a ticket with an Idempotency-Key; the same key again is the same answer.
    key = f"flow-{uuid.uuid4()}"
    body = models.OpenTicketIn(subject="Printer on fire", body="Please help",
                               requester=models.RequesterIn(email="ann@example.com"))
    first = open_ticket.sync_detailed(client=client, body=body, idempotency_key=key)
    assert first.status_code == 201, first.content
    assert isinstance(first.parsed, models.TicketOut)
    again = open_ticket.sync_detailed(client=client, body=body, idempotency_key=key)
    assert again.headers["Idempotent-Replayed"] == "true"
    assert again.parsed.id == first.parsed.id
    for _ in range(2):
        open_ticket.sync_detailed(client=client, body=body)
    untyped += _untyped(first.parsed)
    # The check sees a member the document does not declare.
    assert _untyped(models.TicketOut.from_dict({**json.loads(first.content), "surprise": 1}))

    # Page the list, one at a time, to its end.
    seen, cursor, pages = [], None, 0
    while True:
        page = list_tickets.sync_detailed(client=client, limit=1,
                                          **({"cursor": cursor} if cursor else {}))
        assert page.status_code == 200, page.content
        untyped += _untyped(page.parsed)
        seen += [t.id for t in page.parsed.data]
        pages += 1
        cursor = page.parsed.next_cursor
        if not cursor:
            break
    assert len(seen) == len(set(seen)) == 3 and first.parsed.id in seen and pages >= 3

    # Reply, then change the state with If-Match from the ETag the reply declares.
    ticket_id = first.parsed.id
    reply = post_message.sync_detailed(ticket_id, client=client,
                                       body=models.MessageIn(body="On it."))
    assert reply.status_code == 201, reply.content
    untyped += _untyped(reply.parsed)
    path = "/v1/tickets/{ticket_id}/messages"
    assert "etag" in declared_headers(document, "POST", path, 201)
    etag = reply.headers["ETag"]
    state = models.StateIn(state=models.TicketState.PENDING)
    moved = set_state.sync_detailed(ticket_id, client=client, body=state, if_match=etag)
    assert moved.status_code == 200, moved.content
    assert moved.parsed.state == models.TicketState.PENDING
    untyped += _untyped(moved.parsed)

    # Problems, with their declared members typed.
    stale = set_state.sync_detailed(ticket_id, client=client, if_match=etag,
                                    body=models.StateIn(state=models.TicketState.OPEN))
    assert stale.status_code == 412
    assert isinstance(stale.parsed, models.PreconditionFailedProblem)
    assert stale.parsed.current_version == int(moved.headers["ETag"].strip('"'))
    invalid = open_ticket.sync_detailed(client=client, body=models.OpenTicketIn(
        subject="Hello", body="World", requester=models.RequesterIn(email="not an e-mail")))
    assert invalid.status_code == 422
    assert isinstance(invalid.parsed, models.ValidationFailedProblem)
    assert invalid.parsed.errors[0].loc[:2] == ["body", "requester"], invalid.content
    # A parameter problem: its parameters, typed.
    repeated = client.get_httpx_client().get("/v1/tickets", params=[("limit", 1),
                                                                     ("limit", 2)])
    parsed = list_tickets._parse_response(client=client, response=repeated)
    assert isinstance(parsed, models.RepeatedParameterProblem)
    assert parsed.parameters == ["limit"]
    for problem in (stale.parsed, invalid.parsed, parsed):
        untyped += _untyped(problem)
    assert untyped == [], untyped
