"""Re-indexing a tenant for search (``helpdesk search rebuild``).

The index is kept up to date by every command (projections/inline.py); a rebuild
recomputes it from the read models, in one transaction, for a tenant whose index is
suspect or that predates search. Changing the tenant's text-search configuration
re-indexes by itself (handlers/tenant_settings.py).
"""

from __future__ import annotations

from eventstore.store import UnitOfWork
from projections.search import reindex


async def rebuild_search_index(uow: UnitOfWork) -> dict[str, int]:
    """Re-index the unit of work's tenant (tickets, contacts, organizations); returns
    how many things of each kind were indexed."""
    return await reindex(uow.conn, uow.tenant_id)


__all__ = ["rebuild_search_index"]
