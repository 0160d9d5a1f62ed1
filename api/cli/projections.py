"""``helpdesk projections status`` and ``helpdesk projections rebuild NAME [--tenant T]``."""

from __future__ import annotations

import sys
import uuid
from dataclasses import replace

from tqdm import tqdm

from api.config import ProcessSettings
from api.root import ProcessRole, running
from domain.ids import TenantId
from eventstore.pool import create_pool
from projections import admin
from projections.projector import Projector


async def show_status(settings: ProcessSettings) -> int:
    """Print lag per projection and tenant: checkpoints are made on the primary for
    tenants that have none yet, then read where lag is tolerated (the replica while it
    is fit). The heads shown are the primary's, so a replica's delay is in the lag."""
    async with running(settings, ProcessRole.CLI) as services:
        await Projector(services.pool).ensure_checkpoints()
        rows, source = await services.reads.run(lambda store: admin.status(store.pool))
        if source.replica:
            primary = await admin.heads(services.pool)
            rows = [replace(r, head=max(r.head, primary.get(r.tenant_id, 0))) for r in rows]
    behind = f", {source.lag_seconds:.3f} s behind the primary" if source.replica else ""
    print(f"read from the {source.name}{behind}")
    print(f"{'projection':<12} {'tenant':<36} {'name':<20} {'last_seq':>10} {'head':>10} "
          f"{'lag':>8}  rebuilding")
    for r in rows:
        print(f"{r.projection:<12} {r.tenant_id!s:<36} {r.tenant_name[:20]:<20} "
              f"{r.last_seq:>10} {r.head:>10} {r.lag:>8}  {'yes' if r.rebuilding else 'no'}")
    return 0


REBUILD_BATCH = 2000
"""Events per transaction in a rebuild: larger than the live projector's batches, since
a rebuild favours throughput over the time a checkpoint stays locked."""


async def run_rebuild(settings: ProcessSettings, name: str, tenant: str | None,
                      batch_size: int | None = None) -> int:
    """Rebuild ``name`` from seq 0 for one tenant or all, with a progress bar each."""
    assert settings.database_url
    pool = await create_pool(settings.database_url, min_size=1, max_size=3)
    try:
        projector = Projector(pool, batch_size=batch_size or REBUILD_BATCH)
        if name not in projector.projections:
            print(f"helpdesk: unknown projection {name!r}; known: "
                  + ", ".join(sorted(projector.projections)), file=sys.stderr)
            return 2
        if tenant is not None:
            try:
                tenants = [TenantId(uuid.UUID(tenant))]
            except ValueError:
                print(f"helpdesk: --tenant must be a tenant id, not {tenant!r}", file=sys.stderr)
                return 2
        else:
            tenants = await admin.tenant_ids(pool)
        for tenant_id in tenants:
            with tqdm(desc=f"{name} {tenant_id}", unit="ev", file=sys.stderr,
                      dynamic_ncols=True) as bar:

                def progress(done: int, head: int, bar: tqdm = bar) -> None:
                    bar.total = head
                    bar.n = done
                    bar.refresh()

                try:
                    await admin.rebuild(projector, name, tenant_id, progress)
                except LookupError as exc:
                    print(f"helpdesk: {exc}", file=sys.stderr)
                    return 2
    finally:
        await pool.close()
    return 0
