"""``uploads.purge``: uploads never attached, and blobs nothing holds, are deleted.

An upload not attached to a message within ``UNATTACHED_FOR`` (a day) is deleted with
its blob; so is a blob an upload began and never completed (the process died, the
database went away before the upload's own clean-up), and a blob no upload holds any
more (an upload that found the contact holding the same bytes shares theirs, and its
own is left). Runs per tenant, hourly, under the tenant's context, on the injected
clock. Blobs kept in a directory lose their file once their row is gone (a file whose
deletion failed is only ciphertext whose key went with the row).
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


async def purge_uploads(ctx: JobContext, tenant_id: TenantId,
                        directory: Path | None = None) -> tuple[int, int]:
    """Delete the tenant's unattached uploads older than a day and the blobs nothing
    holds (module docstring); returns (uploads, blobs) deleted."""
    before = ctx.clock.now() - UNATTACHED_FOR
    async with ctx.store.session(tenant_id, SYSTEM) as s:
        status: str = await s.conn.execute(_UPLOADS, tenant_id, before)
        blobs = await s.conn.fetch(_BLOBS, tenant_id, before)
    on_disk = [r["id"] for r in blobs if r["storage"] == "filesystem"]
    if on_disk and directory is not None:
        await DirectoryStorage(directory).delete(tenant_id, on_disk)
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
