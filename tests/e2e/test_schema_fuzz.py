"""Schema fuzzing: schemathesis drives the app's own OpenAPI against a real server:
every operation on its own, boundary values of every parameter (its coverage phase),
and stateful workflows.

Bounded: a fixed number of examples per operation and of workflows (each a few calls
long), derandomized or seeded, no example database. Fails on any 5xx,
undocumented status or content type, or a body that breaks the documented schema.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import httpx
import schemathesis
from hypothesis import HealthCheck, Phase, given, settings
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from api.app import create_app
from api.config import Settings
from tests.support.live import serve

CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance,
          response_schema_conformance]
EXAMPLES = 25
STATEFUL_EXAMPLES = 40
"""Scenarios of the stateful phase, each at most ``STATEFUL_STEPS`` calls long."""
STATEFUL_STEPS = 8


def test_fuzz_the_documented_api(db, tenant):
    app_settings = Settings(database_url=db.runtime_url, db_pool_min=1, db_pool_max=4,
                            max_body_bytes=65_536, _env_file=None)  # type: ignore[call-arg]
    app = create_app(app_settings)
    headers = {"Authorization": f"Bearer {tenant.admin_key.secret}"}
    with serve(app) as url:
        ticket = httpx.post(f"{url}/v1/tickets", headers=headers, json={
            "subject": "s", "body": "b", "requester": {"email": "a@example.com"}}).json()
        schema = schemathesis.openapi.from_dict(app.openapi())
        operations = [result.ok() for result in schema.get_all_operations()]
        assert len(operations) >= 9
        seen: dict[tuple[str, int], int] = {}
        for operation in operations:

            @given(case=operation.as_strategy())
            @settings(max_examples=EXAMPLES, deadline=None, derandomize=True, database=None,
                      phases=[Phase.explicit, Phase.generate],
                      suppress_health_check=list(HealthCheck))
            def run(case):  # type: ignore[no-untyped-def]
                if case.path_parameters and "ticket_id" in case.path_parameters:
                    # Aim most cases at a real ticket, so commands get past 404.
                    case.path_parameters["ticket_id"] = ticket["id"]
                response = case.call_and_validate(base_url=url, headers=headers,
                                                  checks=CHECKS)
                key = (case.operation.label, response.status_code)
                seen[key] = seen.get(key, 0) + 1

            run()
        # The run reached past validation: reads and commands succeeded too.
        succeeded = {label for (label, status), _ in seen.items() if status < 300}
        assert {"GET /v1/tickets", "GET /v1/tickets/{ticket_id}",
                "POST /v1/tickets/{ticket_id}/priority"} <= succeeded, seen



def test_stateful_workflows_find_no_server_error(db, tenant):
    """Schemathesis' stateful phase: chains of calls along the links it infers from the
    document (open a ticket, then command it by the id in the answer, and so on)."""
    app = create_app(Settings(database_url=db.runtime_url, db_pool_min=1, db_pool_max=4,
                              max_body_bytes=65_536, _env_file=None))  # type: ignore[call-arg]
    headers = {"Authorization": f"Bearer {tenant.admin_key.secret}"}
    seen: dict[tuple[str, int], int] = {}
    failures: list[str] = []
    with serve(app) as url:
        schema = schemathesis.openapi.from_dict(app.openapi())
        machine = schema.as_state_machine()
        assert schema.statistic.transitions.total >= 50  # links to follow

        class Workflow(machine):  # type: ignore[misc,valid-type]
            def get_call_kwargs(self, case):  # type: ignore[no-untyped-def]
                return {"base_url": url, "headers": headers}

            def validate_response(self, response, case, additional_checks=None,  # type: ignore[no-untyped-def]
                                  **kwargs):
                key = (case.operation.label, response.status_code)
                seen[key] = seen.get(key, 0) + 1
                try:
                    case.validate_response(response, checks=CHECKS,
                                           transport_kwargs=kwargs or None)
                except Exception as exc:  # every failure, reported at the end
                    failures.append(f"{case.operation.label} -> {response.status_code}: "
                                    f"{str(exc)[:400]}\n{case.as_curl_command()}")

        # Failures are collected rather than raised: a workflow's calls change the
        # database, so Hypothesis could not replay one to shrink it anyway.
        Workflow.run(settings=settings(
            max_examples=STATEFUL_EXAMPLES, stateful_step_count=STATEFUL_STEPS, deadline=None,
            derandomize=True, database=None, phases=[Phase.generate],
            suppress_health_check=list(HealthCheck)))
    assert not failures, "\n\n".join(failures)
    assert not [key for key in seen if key[1] >= 500], seen
    # The chains got somewhere: tickets were opened, then read or changed by their id.
    succeeded = {label for (label, status) in seen if status < 300}
    assert "POST /v1/tickets" in succeeded, seen
    assert any(label.startswith(("GET /v1/tickets/{ticket_id}", "POST /v1/tickets/{ticket_id}"))
               for label in succeeded), seen


def test_boundary_values_of_every_parameter_find_no_server_error(db, tenant, tmp_path):
    """Schemathesis' coverage phase (its command line): for every operation, values at
    and just past each documented bound (lengths, ranges, formats, enumerations,
    missing and extra parts), as a client would send them over the wire."""
    app = create_app(Settings(database_url=db.runtime_url, db_pool_min=1, db_pool_max=4,
                              max_body_bytes=65_536, _env_file=None))  # type: ignore[call-arg]
    with serve(app) as url:
        run = subprocess.run(
            [str(Path(sys.executable).with_name("schemathesis")), "run",
             f"{url}/openapi.json", "--phases", "coverage", "--seed", "1", "--workers", "1",
             "--checks", ",".join(check.__name__ for check in CHECKS),
             "--header", f"Authorization: Bearer {tenant.admin_key.secret}"],
            capture_output=True, text=True, timeout=300, check=False,
            cwd=tmp_path)  # it keeps a state directory where it runs
    report = run.stdout + run.stderr
    assert run.returncode == 0, report
    tested = re.search(r"Tested: (\d+)", report)
    assert tested and int(tested.group(1)) >= 30, report
