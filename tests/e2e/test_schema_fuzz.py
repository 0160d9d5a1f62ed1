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
import pytest
import schemathesis
from hypothesis import HealthCheck, Phase, given, settings
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from api.app import create_app
from api.config import ProcessSettings
from tests.support.live import serve

CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance,
          response_schema_conformance]
EXAMPLES = 25
STATEFUL_EXAMPLES = 30
"""The stateful phase's budget (``--max-examples`` of the command line)."""


def test_fuzz_the_documented_api(db, tenant):
    app_settings = ProcessSettings(database_url=db.runtime_url, db_pool_min=1, db_pool_max=4,
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



@pytest.mark.slow  # starts the schemathesis command line
def test_boundary_values_and_stateful_workflows_find_no_server_error(db, tenant, tmp_path):
    """Schemathesis' own engine (its command line), two phases: coverage (for every
    operation, values at and just past each documented bound, missing and extra parts)
    and stateful (chains of calls along the links it infers from the document: open a
    ticket, then command it by the id in the answer, and so on). The engine, unlike a
    Hypothesis state machine run here, copes with workflows that change the database
    and so cannot be replayed exactly."""
    app = create_app(ProcessSettings(database_url=db.runtime_url, db_pool_min=1, db_pool_max=4,
                                     max_body_bytes=65_536, _env_file=None))  # type: ignore[call-arg]
    with serve(app) as url:
        run = subprocess.run(
            [str(Path(sys.executable).with_name("schemathesis")), "run",
             f"{url}/openapi.json", "--phases", "coverage,stateful",
             "--max-examples", str(STATEFUL_EXAMPLES), "--seed", "1", "--workers", "1",
             "--checks", ",".join(check.__name__ for check in CHECKS),
             "--header", f"Authorization: Bearer {tenant.admin_key.secret}"],
            capture_output=True, text=True, timeout=300, check=False,
            cwd=tmp_path)  # it keeps a state directory where it runs
    report = run.stdout + run.stderr
    assert run.returncode == 0, report
    tested = re.search(r"Tested: (\d+)", report)
    assert tested and int(tested.group(1)) >= 30, report
    # The workflows got somewhere: several scenarios, following links. (Fewer than
    # before messages and openings took ``attachments``: generated bodies name upload
    # ids no upload has, which is a 404 by design, so more chains stop at their first
    # step; with seed 1: 13 scenarios and 2 links, and 18 and 6 with the upload and
    # download operations left out.)
    scenarios = re.search(r"Scenarios:\s+(\d+)", report)
    links = re.search(r"API Links:\s+(\d+) covered", report)
    assert scenarios and int(scenarios.group(1)) >= 12, report
    assert links and int(links.group(1)) >= 2, report
