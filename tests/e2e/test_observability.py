"""JSON log lines carry request id, tenant and actor; /metrics counts by route template."""

from __future__ import annotations

import io
import logging

import orjson

from api.app import create_app
from api.config import ProcessSettings
from api.ops.logging import JsonFormatter
from tests.e2e.conftest import asgi_client
from tests.support.pg import TestDatabase as Db


async def test_every_log_line_of_a_request_has_its_id_tenant_and_actor(
    db: Db, make_tenant
) -> None:
    t = await make_tenant("A")
    app = create_app(ProcessSettings(database_url=db.runtime_url, db_pool_min=1, db_pool_max=2))
    sink = io.StringIO()
    handler = logging.StreamHandler(sink)
    handler.setFormatter(JsonFormatter())
    access = logging.getLogger("helpdesk.access")
    access.addHandler(handler)
    old_level = access.level
    access.setLevel(logging.INFO)
    try:
        async with asgi_client(app) as http:
            r = await http.get("/v1/webhooks", headers={
                "Authorization": f"Bearer {t.admin_key.secret}", "X-Request-Id": "req-42"})
            assert r.headers["x-request-id"] == "req-42"
            r = await http.get("/health/live", headers={"X-Request-Id": "bad id;<x>"})
            generated = r.headers["x-request-id"]
            assert generated != "bad id;<x>" and len(generated) == 32
    finally:
        access.removeHandler(handler)
        access.setLevel(old_level)
    lines = [orjson.loads(line) for line in sink.getvalue().splitlines()]
    first, second = lines
    assert first["request_id"] == "req-42"
    assert first["tenant_id"] == str(t.tenant_id)
    assert first["actor"] == f"api_key:{t.admin_key.id}"
    assert first["status"] == 404 and first["path"] == "/v1/webhooks"
    assert first["level"] == "info" and first["logger"] == "helpdesk.access"
    assert second["request_id"] == generated and "tenant_id" not in second


async def test_metrics_count_requests_by_route_template_and_status(db: Db) -> None:
    app = create_app(ProcessSettings(database_url=db.runtime_url, db_pool_min=1, db_pool_max=2))
    async with asgi_client(app) as http:
        await http.get("/v1/webhooks")
        await http.get("/v1/webhooks")
        await http.get("/nowhere/123")
        r = await http.get("/metrics")
    assert r.headers["content-type"].startswith("text/plain")
    text = r.text
    assert ('helpdesk_http_requests_total{method="GET",route="/v1/webhooks",status="401"} 2.0'
            in text)
    assert 'route="unmatched",status="404"' in text
    assert 'helpdesk_http_request_duration_seconds_count{method="GET",route="/v1/webhooks"} 2.0' \
        in text
    for name in ("helpdesk_events_appended_total", "helpdesk_job_claims_total",
                 "helpdesk_job_outcomes_total", "helpdesk_projection_lag_events",
                 "helpdesk_websocket_connections", "helpdesk_redis_circuit_state 0.0"):
        assert name in text


async def test_metrics_report_projection_lag_and_feed_connections(db: Db, make_tenant) -> None:
    tenant = await make_tenant("Acme")  # its stream holds ApiKeyIssued: one event
    app = create_app(ProcessSettings(database_url=db.runtime_url, db_pool_min=1, db_pool_max=2))
    async with asgi_client(app) as http:
        await http.post("/v1/tickets", headers={"Authorization":
                                                f"Bearer {tenant.admin_key.secret}"},
                        json={"subject": "s", "body": "b",
                              "requester": {"email": "a@example.com"}})
        text = (await http.get("/metrics")).text
    # No projector runs here (RUN_SCHEDULER is off): the key's event, the requester's
    # new contact and the ticket are still to apply.
    assert 'helpdesk_projection_lag_events{projection="analytics"} 3.0' in text
    assert "helpdesk_websocket_connections 0.0" in text
