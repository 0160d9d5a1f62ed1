"""The problem registry holds every code the code answers with, and the OpenAPI
document's problem answers are the registry's, code by code."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

from api.http.problem_registry import PROBLEMS, codes_of
from api.http.problems import _DOMAIN_STATUS, _HANDLER_STATUS
from tests.support.contract import _resolve

ROOT = Path(__file__).resolve().parents[2]
_KINDS = {cls.__name__: status for cls, status in _HANDLER_STATUS.items()}
_CALLS = {"Problem", "problem_response", "QueryRefused", *_KINDS}
UNDOCUMENTED = {"method_not_allowed": "answered by the router for a method no operation "
                                      "has, so no operation of the document has it"}


def _raised() -> dict[str, set[int | None]]:
    """Every literal code given to a problem or a handler error in the source, with
    the status it answers (None: the status is decided elsewhere)."""
    found: dict[str, set[int | None]] = {}
    for package in ("api", "handlers", "projections", "eventstore", "domain"):
        for path in (ROOT / package).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text())):
                if not isinstance(node, ast.Call):
                    continue
                name = getattr(node.func, "id", getattr(node.func, "attr", None))
                if name not in _CALLS:
                    continue
                consts = [a.value for a in node.args if isinstance(a, ast.Constant)]
                code = next((c for c in consts if isinstance(c, str)), None)
                if code is None or " " in code:
                    continue
                status = next((c for c in consts if isinstance(c, int)), _KINDS.get(name))
                found.setdefault(code, set()).add(status)
    return found


def test_every_code_raised_is_registered_with_its_status():
    raised = _raised()
    assert len(raised) > 40
    for code, statuses in raised.items():
        assert code in PROBLEMS, f"{code} is answered but not in the problem registry"
        for status in statuses - {None}:
            assert PROBLEMS[code].status == status, (code, status)


def test_every_domain_error_code_is_registered_with_its_status():
    for cls, status in _DOMAIN_STATUS.items():
        assert PROBLEMS[cls.code].status == status, cls


def test_every_operation_documents_its_problems_from_the_registry():
    from api.app import create_app
    from api.config import ProcessSettings

    document = create_app(ProcessSettings(_env_file=None)).openapi()  # type: ignore[call-arg]
    documented: set[str] = set()
    checked = 0
    for path, item in document["paths"].items():
        for op in item.values():
            for status, answer in op["responses"].items():
                if int(status) < 400 or (path == "/health/ready" and status == "503"):
                    continue  # readiness says why in its own body
                schema = answer["content"]["application/problem+json"]["schema"]
                assert schema == {"$ref": f"#/components/schemas/Problem{status}"}
                codes = _codes(document, _resolve(document, schema))
                assert set(codes) == {c.code for c in codes_of(int(status))}, (path, status)
                for code, body in codes.items():
                    _check_body(code, int(status), body)
                documented |= codes.keys()
                checked += 1
    assert checked > 300
    assert set(PROBLEMS) - documented == set(UNDOCUMENTED)


def _codes(document: dict[str, Any], schema: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Each code of a status's schema, with the body schema it has there."""
    out: dict[str, dict[str, Any]] = {}
    for alternative in schema.get("oneOf", [schema]):
        body = _resolve(document, alternative)
        for code in body["properties"]["code"]["enum"]:
            assert code not in out, f"{code} has two bodies"
            out[code] = body
    return out


def _check_body(code: str, status: int, body: dict[str, Any]) -> None:
    row = PROBLEMS[code]
    assert row.status == status, code
    assert body["additionalProperties"] is False, code
    assert body["properties"]["status"]["enum"] == [status]
    base = {"type", "title", "status", "code", "detail", "instance"}
    assert set(body["properties"]) - base == set(row.members), code
    required = set(body["required"]) - base
    assert required == {name for name, m in row.members.items() if m.required}, code
    for name, member in row.members.items():
        assert body["properties"][name] == dict(member.schema), (code, name)


def test_an_unregistered_code_is_logged_where_it_is_answered(caplog):
    from api.http.problems import problem_response

    problem_response(404, "not_found", "no such thing")
    assert not caplog.records
    problem_response(418, "teapot", "short and stout")
    assert [r.getMessage() for r in caplog.records] == [
        "problem code 'teapot' is not in api/http/problem_registry.py"]
