"""``helpdesk search rebuild [--tenant T]``: re-index one tenant, or every tenant."""

from __future__ import annotations

import argparse
import asyncio
import sys
from uuid import UUID

from api.cli.database import using_database
from api.cli.parsing import Subcommands, action, command
from api.config import ProcessSettings
from api.root import ProcessRole, running
from domain.ids import TenantId
from handlers.search import rebuild_search_index
from projections import admin


async def rebuild(settings: ProcessSettings, tenant: TenantId | None) -> int:
    """Re-index, one transaction per tenant; prints what was done per tenant."""
    async with running(settings, ProcessRole.CLI) as services:
        tenants = [tenant] if tenant is not None else await admin.tenant_ids(services.pool)
        for tenant_id in tenants:
            async with services.store.unit_of_work(tenant_id) as uow:
                n = await rebuild_search_index(uow)
            print(f"helpdesk: tenant {tenant_id}: {n['ticket']} ticket(s), "
                  f"{n['contact']} contact(s), {n['organization']} organization(s) indexed",
                  file=sys.stderr)
    return 0


def cmd_rebuild(args: argparse.Namespace, settings: ProcessSettings) -> int:
    with using_database(settings, announce=False) as resolved:
        tenant = TenantId(args.tenant) if args.tenant is not None else None
        return asyncio.run(rebuild(resolved, tenant))


def add_parser(sub: Subcommands) -> None:
    """Register ``helpdesk search rebuild``."""
    ssub = command(sub, "search", "maintain the full-text search index")
    p = action(ssub, "rebuild", cmd_rebuild,
               help="re-index a tenant's tickets, contacts and organizations (every tenant "
                    "without --tenant), as the tenant's text-search configuration says")
    p.add_argument("--tenant", type=UUID, help="tenant id")
