"""A new tenant has its per-tenant periodic jobs (the sweep, the idempotency purge)
from the moment it is created, not from the seeder's next run."""

from __future__ import annotations

from datetime import UTC, datetime

import asyncpg

from api.config import ProcessSettings
from api.root import job_registry
from handlers.tenants import create_tenant_as_operator


async def test_a_new_tenant_has_every_per_tenant_periodic_job_when_created(db):
    before = datetime.now(UTC)
    tenant = await create_tenant_as_operator(db.admin_url, "New")
    per_tenant = {(p.kind, p.dedupe_key)
                  for p in job_registry(ProcessSettings(_env_file=None)).periods.values()
                  if p.per_tenant}
    assert {kind for kind, _ in per_tenant} == {"tickets.sweep", "idempotency.purge",
                                                "uploads.purge", "rules.time_pass",
                                                "sla.warn_pass"}
    conn = await asyncpg.connect(db.admin_url)
    try:
        rows = await conn.fetch("SELECT kind, dedupe_key, status, run_at FROM jobs "
                                "WHERE tenant_id = $1", tenant.tenant_id)
    finally:
        await conn.close()
    # Under the keys the seeder uses, so it never adds a second one; live and due now.
    assert {(r["kind"], r["dedupe_key"]) for r in rows} == per_tenant
    for r in rows:
        assert r["status"] == "ready" and before <= r["run_at"] <= datetime.now(UTC)
