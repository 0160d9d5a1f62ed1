"""The published contract: ``docs/openapi.json`` is what the app serves, a valid
OpenAPI document by independent validators, and its problem registry is served too.

Regenerate the file with ``python -m api.cli.openapi`` after changing the API.
"""

from __future__ import annotations

import json

from openapi_spec_validator import validate
from openapi_spec_validator.validation.exceptions import OpenAPIValidationError

from api.cli.openapi import CONTRACT, render
from api.http.problem_registry import PROBLEMS
from tests.e2e.conftest import auth


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
