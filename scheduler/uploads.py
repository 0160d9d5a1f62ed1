"""``uploads.purge``: uploads never attached, and blobs nothing holds, are deleted.

An upload not attached to a message within ``UNATTACHED_FOR`` (a day) is deleted with
its blob; so is a blob an upload began and never completed (the process died, the
database went away before the upload's own clean-up), and a blob no upload holds any
more (an upload that found the contact holding the same bytes shares theirs, and its
own is left). Runs per tenant, hourly, under the tenant's context, on the
injected clock. Blobs kept in a directory lose their file with their row; and the
tenant's files that no row names any more (a blob deleted by an erasure or a
deduplication while its file could not go: ciphertext whose key went with its row) are
removed too.
"""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

from domain.ids import TenantId
from eventstore.blobs import DirectoryStorage
from eventstore.types import SYSTEM
from scheduler.queue import Job
from scheduler.registry import JobContext, Registry

KIND = "uploads.purge"
UNATTACHED_FOR = timedelta(days=1)

_UPLOADS = """
DELETE FROM uploads WHERE tenant_id = $1 AND ticket_id IS NULL AND created_at < $2
"""
# A blob that is 'stored' always has its upload from the transaction that stored it, so
# one that no upload holds is left over; one still 'receiving' a day on never will be.
_BLOBS = """
DELETE FROM file_blobs b
 WHERE b.tenant_id = $1
   AND ((b.state = 'receiving' AND b.created_at < $2)
        OR (b.state = 'stored'
            AND NOT EXISTS (SELECT 1 FROM uploads u
                             WHERE u.tenant_id = b.tenant_id AND u.blob_id = b.id)))
RETURNING b.id, b.storage
"""
_FILED = "SELECT id FROM file_blobs WHERE tenant_id = $1 AND storage = 'filesystem'"


async def purge_uploads(ctx: JobContext, tenant_id: TenantId,
                        directory: Path | None = None) -> tuple[int, int]:
    """Delete the tenant's unattached uploads older than a day and the blobs nothing
    holds (module docstring); returns (uploads, blobs) deleted."""
    before = ctx.clock.now() - UNATTACHED_FOR
    async with ctx.store.unit_of_work(tenant_id, SYSTEM) as s:
        status: str = await s.conn.execute(_UPLOADS, tenant_id, before)
        blobs = await s.conn.fetch(_BLOBS, tenant_id, before)
    if directory is not None:
        storage = DirectoryStorage(directory)
        on_disk = [r["id"] for r in blobs if r["storage"] == "filesystem"]
        # Files first, rows after: a blob's row commits before its file exists, so
        # every file listed that is still wanted has its row in the read that follows.
        files = await storage.stored(tenant_id)
        async with ctx.store.unit_of_work(tenant_id, SYSTEM, readonly=True) as s:
            kept = {r["id"] for r in await s.conn.fetch(_FILED, tenant_id)}
        on_disk += [b for b in files if b not in kept]
        await storage.delete(tenant_id, on_disk)
    return int(status.split()[-1]), len(blobs)


def register(registry: Registry, directory: Path | None = None,
             every: timedelta = timedelta(hours=1)) -> None:
    """Add the per-tenant periodic ``uploads.purge`` to ``registry``; ``directory`` is
    the file storage directory, if one is configured."""

    async def handle(ctx: JobContext, job: Job) -> None:
        if job.tenant_id is None:
            raise ValueError("uploads.purge needs a tenant")
        await purge_uploads(ctx, job.tenant_id, directory)

    registry.periodic(KIND, every, handle, per_tenant=True)
