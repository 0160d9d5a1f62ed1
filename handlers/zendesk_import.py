"""``helpdesk import zendesk`` (api/cli/imports.py): a Zendesk export brought into a tenant
as history, through the same command handlers as the API (docs/import.md).

The export is read from files (handlers/zendesk_export.py); its people, organizations,
groups and ticket fields become ours in handlers/zendesk_records.py, its tickets in
handlers/zendesk_tickets.py (a batch of them at a time: handlers/zendesk_batch.py), each
record in a transaction together with the ``import_sources`` row that makes a rerun
skip it.
"""

from __future__ import annotations

from pathlib import Path

from domain.ids import TenantId
from eventstore.store import EventStore
from handlers import attachments
from handlers.zendesk_export import read_export
from handlers.zendesk_records import (
    ACTOR,
    SOURCE,
    Checkpoint,
    ImportReport,
    Progress,
    Q,
    Run,
    deactivate_agents,
    import_fields,
    import_groups,
    import_organizations,
    import_users,
    together,
)
from handlers.zendesk_tickets import import_tickets


async def import_zendesk(store: EventStore, storages: attachments.Storages | None,
                         tenant_id: TenantId, directory: Path, *, dry_run: bool = False,
                         progress: Progress | None = None,
                         checkpoint: Checkpoint | None = None,
                         one_by_one: bool = False) -> ImportReport:
    """Import the export in ``directory`` into ``tenant_id`` (module docstring).

    ``dry_run`` writes nothing and reports what would be created and skipped.
    ``storages`` keeps the attachments' files (None: none are imported, each reported).
    Tickets go a batch a transaction (handlers/zendesk_batch.py), the other records a
    kind a transaction (``zendesk_records.together``); ``one_by_one`` writes each record
    in a transaction of its own through the command handlers instead, the path both
    fall back to (they make the same history: tests/integration/test_zendesk_batch.py).
    """
    export = read_export(directory)
    report = ImportReport(dry_run=dry_run)
    report.skipped.extend(export.unreadable)
    run = Run(store, storages, tenant_id, export, report, checkpoint, progress)
    async with store.unit_of_work(tenant_id, ACTOR, readonly=True) as uow:
        for row in await uow.conn.fetch(Q["imported"], tenant_id, SOURCE):
            run.mapped[(row["kind"], row["source_id"])] = row["target_id"]
    for step in (import_organizations, import_users, import_groups, import_fields):
        if one_by_one:
            await step(run, dry_run)
        else:
            await together(run, step, dry_run)
    await import_tickets(run, dry_run, one_by_one=one_by_one)
    if not dry_run:
        await deactivate_agents(run)
    return report



__all__ = ["import_zendesk"]
