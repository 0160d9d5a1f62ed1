"""Every pooled connection busy (a slow or hung database holds them): requests get a
prompt 503 instead of queueing without end, and recover once a connection is free."""

from __future__ import annotations

import time

import pytest

from api.app import create_app
from api.config import ProcessSettings
from api.root import ProcessRole, running
from eventstore.errors import StoreUnavailable
from projections import analytics_reads as reads
from tests.e2e.conftest import NEW_TICKET, asgi_client, auth


async def test_a_full_pool_answers_503_quickly_then_recovers(db, make_tenant):
    tenant = await make_tenant("Acme")
    settings = ProcessSettings(database_url=db.runtime_url, db_pool_min=1, db_pool_max=1,
                               db_acquire_timeout=0.3, _env_file=None)  # type: ignore[call-arg]
    async with running(settings, ProcessRole.SERVE) as services:
        app = create_app(settings, services=services)
        async with asgi_client(app) as http:
            held = await services.pool.acquire()  # the only connection, taken
            try:
                started = time.monotonic()
                r = await http.post("/v1/tickets", json=NEW_TICKET,
                                    headers=auth(tenant.admin_key))
                elapsed = time.monotonic() - started
            finally:
                await services.pool.release(held)
            assert r.status_code == 503, r.text
            assert r.headers["content-type"] == "application/problem+json"
            assert r.json()["code"] == "database_unavailable"
            assert elapsed < 2.0
            again = await http.post("/v1/tickets", json=NEW_TICKET,
                                    headers=auth(tenant.admin_key))
            assert again.status_code == 201, again.text


async def test_read_model_reads_on_a_full_pool_give_up_promptly(db, make_tenant):
    """Analytics and other read-model reads wait for a connection no longer than a
    unit of work does: StoreUnavailable (a 503), not a request queued without end."""
    tenant = await make_tenant("Acme")
    settings = ProcessSettings(database_url=db.runtime_url, db_pool_min=1, db_pool_max=1,
                               db_acquire_timeout=0.3, _env_file=None)  # type: ignore[call-arg]
    async with running(settings, ProcessRole.CLI) as services:
        held = await services.pool.acquire()
        try:
            for read in (lambda: reads.current(services.store, tenant.tenant_id),
                         lambda: reads.backlog(services.store, tenant.tenant_id,
                                               services.clock.now())):
                started = time.monotonic()
                with pytest.raises(StoreUnavailable):
                    await read()
                assert time.monotonic() - started < 2.0
        finally:
            await services.pool.release(held)
        assert (await reads.backlog(services.store, tenant.tenant_id,
                                    services.clock.now()))["total"] == 0
