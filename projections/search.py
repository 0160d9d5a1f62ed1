"""Full-text search: the index (``search_documents``) and the queries over it.

The index is an inline read model: ``index_tickets`` runs in the command's own
transaction, after ``apply_inline`` wrote the ticket and message rows it reads, so a
search finds a ticket as soon as its command has committed. Each searchable kind
(``SEARCH_KINDS``: tickets today; contacts and organizations to come) has its rows,
its index statement and its search statement; a kind is one more entry.

Queries use ``websearch_to_tsquery``: words are all required, ``"quoted phrase"``
matches the words next to each other in that order, ``-word`` excludes, ``or``
between words accepts either. The tenant's text-search configuration (settings
``text_search``: ``simple`` by default, which folds case but keeps every word as
written; ``english``, ``german`` ... stem and drop stop words) builds both the index
and the query, so changing it re-indexes the tenant (``reindex``).

Who sees what: every searchable thing has two vectors, ``document`` (what any reader
of it may see) and ``staff_document`` (with a ticket's internal notes too); the
caller's role picks which one ``search_matches`` reads (migration 0350, which says why
searches go through that function).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from uuid import UUID

import asyncpg

from domain.ids import TenantId
from eventstore.sqlfile import load_queries

Q = load_queries(Path(__file__).with_name("queries.sql"))

MAX_QUERY_LENGTH = 500
TEXT_SEARCH_CONFIGS = (
    "simple", "arabic", "armenian", "basque", "catalan", "danish", "dutch", "english",
    "finnish", "french", "german", "greek", "hindi", "hungarian", "indonesian", "irish",
    "italian", "lithuanian", "nepali", "norwegian", "portuguese", "romanian", "russian",
    "serbian", "spanish", "swedish", "tamil", "turkish", "yiddish",
)
"""The text-search configurations Postgres ships with, which a tenant may choose."""
SEARCH_KINDS = ("ticket",)
"""What ``GET /v1/search?type=`` can find."""
_REINDEX_BATCH = 500


class QueryRefused(ValueError):
    """A search query that cannot be run, with the problem code that says why."""

    def __init__(self, code: str, reason: str) -> None:
        super().__init__(reason)
        self.code = code
        self.reason = reason


@dataclass(frozen=True, slots=True)
class SearchHit:
    """One result: the thing's id, its rank, its stored API document (JSON text, sent
    as it is) and a short snippet with the matched words in ``<mark>``."""

    id: UUID
    rank: float
    document: bytes
    snippet: str


async def text_search_config(conn: asyncpg.Connection, tenant_id: TenantId) -> str:
    """The tenant's text-search configuration (``simple`` unless set)."""
    return str(await conn.fetchval(Q["text_search_config"], tenant_id))


async def check_query(conn: asyncpg.Connection, text: str, config: str) -> str:
    """``text`` if it is a query that can be searched; ``QueryRefused`` saying why not."""
    if "\x00" in text:
        raise QueryRefused("invalid_query", "the query contains a NUL character")
    if len(text) > MAX_QUERY_LENGTH:
        raise QueryRefused("query_too_long",
                           f"the query has {len(text)} characters; at most "
                           f"{MAX_QUERY_LENGTH} are searched")
    if not text.strip():
        raise QueryRefused("empty_query", "the query is empty: give at least one word")
    parsed = await conn.fetchrow(Q["query_words"], text, config)
    assert parsed is not None
    if not parsed["terms"]:
        raise QueryRefused("empty_query",
                           "the query has no word to search for once parsed: only "
                           "operators, punctuation or words too common to index "
                           f"(stop words of the {config!r} configuration)")
    if not parsed["findable"]:
        raise QueryRefused("empty_query",
                           "the query only excludes (-word): give at least one word "
                           "to find")
    return text


async def index_tickets(conn: asyncpg.Connection, tenant_id: TenantId,
                        ticket_ids: Sequence[UUID], config: str | None = None) -> None:
    """Recompute the search rows of ``ticket_ids`` from their read-model rows."""
    if not ticket_ids:
        return
    if config is None:
        config = await text_search_config(conn, tenant_id)
    await conn.execute(Q["index_tickets"], tenant_id, list(ticket_ids), config)


async def reindex(conn: asyncpg.Connection, tenant_id: TenantId) -> int:
    """Rebuild the tenant's whole index (after its configuration changed, or to repair
    it), in the caller's transaction; returns how many things were indexed."""
    config = await text_search_config(conn, tenant_id)
    await conn.execute(Q["drop_search_documents"], tenant_id, "ticket")
    done, after = 0, UUID(int=0)
    while True:
        ids = [r["id"] for r in await conn.fetch(Q["ticket_ids_after"], tenant_id, after,
                                                 _REINDEX_BATCH)]
        await index_tickets(conn, tenant_id, ids, config)
        done += len(ids)
        if len(ids) < _REINDEX_BATCH:
            return done
        after = ids[-1]


async def index_missing(conn: asyncpg.Connection, tenant_id: TenantId) -> int:
    """Index the tickets that have no search row yet (written before search existed)."""
    config = await text_search_config(conn, tenant_id)
    done = 0
    while True:
        ids = [r["id"] for r in await conn.fetch(Q["unindexed_tickets"], tenant_id,
                                                 _REINDEX_BATCH)]
        await index_tickets(conn, tenant_id, ids, config)
        done += len(ids)
        if len(ids) < _REINDEX_BATCH:
            return done


async def search_tickets(conn: asyncpg.Connection, tenant_id: TenantId, text: str,
                         config: str, *, staff: bool, after: tuple[float, UUID] | None,
                         limit: int) -> list[SearchHit]:
    """Tickets matching ``text``, best first, strictly after the keyset position
    ``after`` (rank, id); ``staff`` searches internal notes too."""
    rank, last_id = after if after is not None else (None, UUID(int=0))
    rows = await conn.fetch(Q["search_tickets"], tenant_id, text, config, rank, last_id,
                            limit, staff)
    return [SearchHit(r["id"], r["rank"], r["view"].encode(), r["snippet"]) for r in rows]


def ticket_filter(staff: bool) -> str:
    """The ticket list's condition for ``q`` (``{n}``: its parameter's number)."""
    return ("AND id IN (SELECT m.id FROM search_matches('ticket', websearch_to_tsquery("
            "(SELECT coalesce((SELECT settings ->> 'text_search' FROM tenant_settings "
            f"WHERE tenant_id = $1), 'simple'))::regconfig, ${{n}}::text), {str(staff).lower()}"
            ") m)")


__all__ = [
    "MAX_QUERY_LENGTH",
    "SEARCH_KINDS",
    "TEXT_SEARCH_CONFIGS",
    "QueryRefused",
    "SearchHit",
    "check_query",
    "index_missing",
    "index_tickets",
    "reindex",
    "search_tickets",
    "text_search_config",
    "ticket_filter",
]
