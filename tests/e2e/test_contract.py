"""The published contract: ``docs/openapi.json`` is what the app serves, a valid
OpenAPI document by independent validators, and its problem registry is served too.

Regenerate the file with ``python -m api.cli.openapi`` after changing the API.
"""

from __future__ import annotations

import json
import subprocess
import uuid
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator
from openapi_spec_validator import validate
from openapi_spec_validator.validation.exceptions import OpenAPIValidationError

from api.cli.openapi import CONTRACT, render
from api.http.problem_registry import PROBLEMS
from tests.e2e.conftest import NEW_TICKET, auth

ROOT = Path(__file__).resolve().parents[2]
SPECTRAL = ROOT / "spectral" / "node_modules" / ".bin" / "spectral"
RULESET = ROOT / "spectral" / "ruleset.yaml"


async def test_the_committed_contract_is_what_the_app_serves(http):
    served = await http.get("/openapi.json")
    assert served.status_code == 200
    assert json.loads(CONTRACT.read_text()) == served.json(), (
        "docs/openapi.json is not the served document: run python -m api.cli.openapi")
    # And byte for byte as the command writes it, so a regeneration is its only diff.
    assert CONTRACT.read_text() == render(served.json())


async def test_openapi_spec_validator_finds_no_error(http):
    document = (await http.get("/openapi.json")).json()
    try:
        validate(document)
    except OpenAPIValidationError as exc:  # pragma: no cover - the failure's message
        raise AssertionError(f"openapi-spec-validator: {exc}") from exc


def _spectral(document: dict[str, Any], tmp_path: Path) -> list[dict[str, Any]]:
    """Spectral's findings (every severity) on ``document``, with spectral/ruleset.yaml."""
    if not SPECTRAL.exists():  # the test command installs it; so does this, the same way
        subprocess.run(["bash", "-c", "source scripts/_venv.sh && spectral_ready"],
                       cwd=ROOT, check=True, timeout=600)
    target = tmp_path / "openapi.json"
    target.write_text(json.dumps(document))
    run = subprocess.run([str(SPECTRAL), "lint", "--ruleset", str(RULESET), "--format",
                          "json", "--fail-severity", "hint", "--quiet", str(target)],
                         capture_output=True, text=True, timeout=300, check=False)
    assert run.returncode in (0, 1), run.stderr
    findings: list[dict[str, Any]] = json.loads(run.stdout or "[]")
    return findings


async def test_spectral_finds_nothing(http, tmp_path):
    document = (await http.get("/openapi.json")).json()
    findings = _spectral(document, tmp_path)
    assert findings == [], "\n".join(
        f"{f['code']} at {'.'.join(map(str, f['path']))}: {f['message']}" for f in findings)
    # Not blind: a document with an undefined tag and a path parameter it does not
    # declare is found out.
    broken = json.loads(json.dumps(document))
    broken["paths"]["/v1/tickets"]["get"]["tags"] = ["nowhere"]
    broken["paths"]["/v1/tickets/{ticket_id}"]["get"]["parameters"] = []
    codes = {f["code"] for f in _spectral(broken, tmp_path)}
    assert {"operation-tag-defined", "path-params"} <= codes, codes


async def test_the_validator_is_not_blind():
    broken = json.loads(CONTRACT.read_text())
    broken["paths"]["/v1/tickets"]["get"]["responses"]["200"]["content"] = "nothing"
    try:
        validate(broken)
    except OpenAPIValidationError:
        return
    raise AssertionError("an invalid document passed")


async def test_the_registry_is_published_with_every_code(http, tenant):
    answer = await http.get("/v1/meta/error-codes", headers=auth(tenant.admin_key))
    assert answer.status_code == 200, answer.text
    rows = answer.json()["data"]
    assert [r["code"] for r in rows] == list(PROBLEMS)
    for row in rows:
        code = PROBLEMS[row["code"]]
        assert row == {"code": code.code, "status": code.status, "title": code.title,
                       "description": code.description}
    refused = await http.get("/v1/meta/error-codes")
    assert refused.status_code == 401


def _valid(document: dict[str, Any], schema: dict[str, Any], value: Any) -> bool:
    """Whether ``value`` is valid by ``schema`` of the document (its refs resolved)."""
    root = {**schema, "components": document["components"]}
    return Draft202012Validator(root).is_valid(value)


def _body_schema(document: dict[str, Any], method: str, path: str) -> dict[str, Any]:
    body = document["paths"][path][method]["requestBody"]["content"]["application/json"]
    return dict(body["schema"])


def _parameter(document: dict[str, Any], method: str, path: str, name: str
               ) -> dict[str, Any]:
    for parameter in document["paths"][path][method]["parameters"]:
        if parameter["name"] == name:
            return dict(parameter["schema"])
    raise KeyError(name)


async def test_the_schema_refuses_what_the_server_refuses_and_no_more(http, tenant):
    """The limits the issue found written only in prose, each on both sides of its
    line: what the schema lets through, the server takes; what it refuses, the server
    refuses with a problem."""
    document = (await http.get("/openapi.json")).json()
    h = auth(tenant.admin_key)
    ticket = (await http.post("/v1/tickets", json=NEW_TICKET, headers=h)).json()
    agent = (await http.post("/v1/agents", headers=h, json={
        "email": f"{uuid.uuid4()}@example.com", "name": "Pat"})).json()
    contact = (await http.post("/v1/contacts", headers=h, json={
        "email": f"{uuid.uuid4()}@example.com", "name": "Ann"})).json()

    async def invitation() -> str:
        made = await http.post("/v1/agents/invitations", headers=h, json={
            "email": f"{uuid.uuid4()}@example.com", "name": "Lee"})
        token: str = made.json()["token"]
        return token

    n = iter(range(1000))
    cases: list[tuple[str, str, str, Any]] = [
        # method, template, url, body
        ("post", "/v1/auth/invitations/accept", "", "9 chars!!"),
        ("post", "/v1/auth/invitations/accept", "", "          "),
        ("post", "/v1/auth/invitations/accept", "", "ten chars!"),
        ("post", "/v1/ticket-fields", "", {"title": ""}),
        ("post", "/v1/ticket-fields", "", {"title": "   "}),
        ("post", "/v1/ticket-fields", "", {"title": "Plan"}),
        ("post", "/v1/organizations", "", {"domains": ["not a domain"]}),
        ("post", "/v1/organizations", "", {"domains": ["x.c"]}),
        ("post", "/v1/organizations", "", {"domains": [" @Example.COM "]}),
        ("post", "/v1/tickets/{ticket_id}/tags", f"/v1/tickets/{ticket['id']}/tags",
         {"add": ["bad tag!"]}),
        ("post", "/v1/tickets/{ticket_id}/tags", f"/v1/tickets/{ticket['id']}/tags",
         {"add": [" VIP "]}),
        ("patch", "/v1/agents/{agent_id}", f"/v1/agents/{agent['id']}", {"name": None}),
        ("patch", "/v1/agents/{agent_id}", f"/v1/agents/{agent['id']}", {}),
        ("patch", "/v1/agents/{agent_id}", f"/v1/agents/{agent['id']}", {"name": "Sam"}),
        ("patch", "/v1/contacts/{contact_id}", f"/v1/contacts/{contact['id']}",
         {"tags": None}),
        ("patch", "/v1/contacts/{contact_id}", f"/v1/contacts/{contact['id']}",
         {"name": None}),
    ]
    for method, template, url, given in cases:
        body = given
        if template == "/v1/auth/invitations/accept":
            body = {"token": await invitation(), "password": given}
        elif template == "/v1/ticket-fields":
            body = {"key": f"f{next(n)}", "type": "text", **given}
        elif template == "/v1/organizations":
            body = {"name": f"Org {uuid.uuid4()}", **given}
        valid = _valid(document, _body_schema(document, method, template), body)
        answer = await http.request(method.upper(), url or template, json=body, headers=h)
        assert (answer.status_code < 300) == valid, (template, body, answer.text)
        if not valid:
            assert answer.status_code == 422, answer.text
            assert answer.json()["errors"], answer.text
    q = _parameter(document, "get", "/v1/search", "q")
    for given in ("", "   ", "help"):
        answer = await http.get("/v1/search", params={"q": given, "type": "ticket"},
                                headers=h)
        assert (answer.status_code == 200) == _valid(document, q, given), answer.text
        if answer.status_code != 200:
            assert answer.json()["parameters"] == ["q"]


async def test_settings_take_if_match_as_the_ticket_routes_do(http, tenant):
    h = auth(tenant.admin_key)
    current = await http.get("/v1/settings", headers=h)
    document = (await http.get("/openapi.json")).json()
    header = _parameter(document, "put", "/v1/settings", "If-Match")
    assert header == _parameter(document, "post", "/v1/tickets/{ticket_id}/state", "If-Match")
    garbage = await http.put("/v1/settings", json=current.json(),
                             headers=h | {"If-Match": "garbage"})
    assert garbage.status_code == 400 and garbage.json()["parameters"] == ["If-Match"]
    stale = await http.put("/v1/settings", json=current.json(),
                           headers=h | {"If-Match": '"999"'})
    assert stale.status_code == 412 and stale.json()["current_version"] >= 0
    done = await http.put("/v1/settings", json=current.json(),
                          headers=h | {"If-Match": current.headers["etag"]})
    assert done.status_code == 200, done.text
