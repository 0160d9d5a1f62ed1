"""Full-text search: the index (``search_documents``) and the queries over it.

The index is an inline read model: ``index_tickets`` runs in the command's own
transaction, after ``apply_inline`` wrote the ticket and message rows it reads, so a
search finds a ticket as soon as its command has committed; ``index_contacts`` and
``index_organizations`` run likewise after their rows are written (projections/
people.py). Each searchable kind (``SEARCH_KINDS``: tickets, contacts,
organizations) has its rows, its index statement and its search statement
(``_KINDS``); a kind is one more entry.

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

import html
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from uuid import UUID

import asyncpg

from domain.contact import Contact
from domain.ids import TenantId
from domain.organization import Organization
from eventstore.sqlfile import load_queries
from eventstore.types import Write

Q = load_queries(Path(__file__).with_name("queries.sql"))

MAX_QUERY_LENGTH = 500
TEXT_SEARCH_CONFIGS = (
    "simple", "arabic", "armenian", "basque", "catalan", "danish", "dutch", "english",
    "finnish", "french", "german", "greek", "hindi", "hungarian", "indonesian", "irish",
    "italian", "lithuanian", "nepali", "norwegian", "portuguese", "romanian", "russian",
    "serbian", "spanish", "swedish", "tamil", "turkish", "yiddish",
)
"""The text-search configurations Postgres ships with, which a tenant may choose."""
SEARCH_KINDS = ("ticket", "contact", "organization")
"""What ``GET /v1/search?type=`` can find."""


@dataclass(frozen=True, slots=True)
class _Kind:
    """A searchable kind's statements: index some ids, page through all ids, find
    those without a row, and search."""

    index: str
    ids_after: str
    unindexed: str
    search: str


_KINDS = {
    "ticket": _Kind("index_tickets", "ticket_ids_after", "unindexed_tickets",
                    "search_tickets"),
    "contact": _Kind("index_contacts", "contact_ids_after", "unindexed_contacts",
                     "search_contacts"),
    "organization": _Kind("index_organizations", "organization_ids_after",
                          "unindexed_organizations", "search_organizations"),
}
_REINDEX_BATCH = 500


class QueryRefused(ValueError):
    """A search query that cannot be run, with the problem code that says why."""

    def __init__(self, code: str, reason: str) -> None:
        super().__init__(reason)
        self.code = code
        self.reason = reason


@dataclass(frozen=True, slots=True)
class SearchHit:
    """One result: the thing's id, its rank, what was found (a ticket's stored API
    document as JSON text, sent as it is; a contact or an organization as its row
    holds it) and a short snippet with the matched words in ``<mark>``."""

    id: UUID
    rank: float
    found: bytes | Contact | Organization
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


async def _index(conn: asyncpg.Connection, tenant_id: TenantId, kind: str,
                 ids: Sequence[UUID], config: str | None, write: Write | None = None) -> None:
    if not ids:
        return
    # Given no configuration, each statement reads the tenant's itself, so indexing on
    # the write path is one statement, which a unit of work may defer (``write``).
    await (write or conn.execute)(Q[_KINDS[kind].index], tenant_id, list(ids), config)


async def index_tickets(conn: asyncpg.Connection, tenant_id: TenantId,
                        ticket_ids: Sequence[UUID], config: str | None = None, *,
                        write: Write | None = None) -> None:
    """Recompute the search rows of ``ticket_ids`` from their read-model rows (by
    ``write`` when given: see ``eventstore.types.Write``)."""
    await _index(conn, tenant_id, "ticket", ticket_ids, config, write)


async def index_new_ticket(tenant_id: TenantId, ticket_id: UUID, subject: str,
                           tags: Sequence[str], requester_name: str | None,
                           requester_email: str, body: str, *, write: Write) -> None:
    """Index a ticket its command just opened, from the values the command holds
    (``index_new_ticket`` in projections/queries.sql): the vectors ``index_tickets``
    would compute from the rows, by ``write``."""
    await write(Q["index_new_ticket"], tenant_id, ticket_id, subject, list(tags),
                requester_name, requester_email, body)


async def index_ticket_message(tenant_id: TenantId, ticket_id: UUID, body: str,
                               public: bool, *, write: Write) -> None:
    """Append one new message's body to its ticket's search vectors, without reading
    the thread (``index_ticket_message`` in projections/queries.sql), by ``write``."""
    await write(Q["index_ticket_message"], tenant_id, ticket_id, body, public)


async def index_contacts(conn: asyncpg.Connection, tenant_id: TenantId,
                         contact_ids: Sequence[UUID], config: str | None = None, *,
                         write: Write | None = None) -> None:
    """Recompute the search rows of ``contact_ids`` from their rows (merged ones
    aside: see ``drop_contact``), by ``write`` when given."""
    await _index(conn, tenant_id, "contact", contact_ids, config, write)


async def drop_contact(conn: asyncpg.Connection, tenant_id: TenantId,
                       contact_id: UUID) -> None:
    """A contact merged away is found no more (its reads redirect to the survivor)."""
    await conn.execute(Q["drop_search_document"], tenant_id, "contact", contact_id)


async def index_organizations(conn: asyncpg.Connection, tenant_id: TenantId,
                              organization_ids: Sequence[UUID],
                              config: str | None = None) -> None:
    """Recompute the search rows of ``organization_ids`` from their rows."""
    await _index(conn, tenant_id, "organization", organization_ids, config)


async def reindex(conn: asyncpg.Connection, tenant_id: TenantId) -> dict[str, int]:
    """Rebuild the tenant's whole index (after its configuration changed, or to repair
    it), in the caller's transaction; returns how many things of each kind were
    indexed."""
    config = await text_search_config(conn, tenant_id)
    done: dict[str, int] = {}
    for kind, statements in _KINDS.items():
        await conn.execute(Q["drop_search_documents"], tenant_id, kind)
        done[kind], after = 0, UUID(int=0)
        while True:
            ids = [r["id"] for r in await conn.fetch(Q[statements.ids_after], tenant_id,
                                                     after, _REINDEX_BATCH)]
            await _index(conn, tenant_id, kind, ids, config)
            done[kind] += len(ids)
            if len(ids) < _REINDEX_BATCH:
                break
            after = ids[-1]
    return done


async def index_missing(conn: asyncpg.Connection, tenant_id: TenantId) -> int:
    """Index the tickets, contacts and organizations that have no search row yet
    (written before search existed); returns how many."""
    config = await text_search_config(conn, tenant_id)
    done = 0
    for kind, statements in _KINDS.items():
        while True:
            ids = [r["id"] for r in await conn.fetch(Q[statements.unindexed], tenant_id,
                                                     _REINDEX_BATCH)]
            await _index(conn, tenant_id, kind, ids, config)
            done += len(ids)
            if len(ids) < _REINDEX_BATCH:
                break
    return done


_START_MARK, _STOP_MARK = "\ue000", "\ue001"
"""What the search statements have ts_headline put around a match (private-use
characters, taken out of the text before): the text is escaped first, then they
become ``<mark>`` tags, so a tag never lands inside an escaped character."""


def marked(headline: str) -> str:
    """A snippet as HTML: ``headline`` (raw text, matches between ``_START_MARK`` and
    ``_STOP_MARK``) escaped, quotes included, its matches in ``<mark>``."""
    return (html.escape(headline, quote=True)
            .replace(_START_MARK, "<mark>").replace(_STOP_MARK, "</mark>"))


def _found(kind: str, row: asyncpg.Record) -> bytes | Contact | Organization:
    if kind == "ticket":
        return str(row["view"]).encode()
    values: dict[str, Any] = {k: v for k, v in row.items() if k not in ("rank", "snippet")}
    return Contact.model_validate(values) if kind == "contact" else \
        Organization.model_validate(values)


async def search(conn: asyncpg.Connection, tenant_id: TenantId, kind: str, text: str,
                 config: str, *, staff: bool, after: tuple[float, UUID] | None,
                 limit: int) -> list[SearchHit]:
    """Things of ``kind`` matching ``text``, best first, strictly after the keyset
    position ``after`` (rank, id); ``staff`` searches tickets' internal notes too."""
    rank, last_id = after if after is not None else (None, UUID(int=0))
    rows = await conn.fetch(Q[_KINDS[kind].search], tenant_id, text, config, rank, last_id,
                            limit, staff)
    return [SearchHit(r["id"], r["rank"], _found(kind, r), marked(r["snippet"]))
            for r in rows]



def ticket_filter(staff: bool) -> str:
    """The ticket list's condition for ``q`` (``{n}``: its parameter's number)."""
    # ticket_search_matches (migration 0912), as the search itself: a scoped agent does
    # not find a merge's target by a merged ticket it may not see.
    return ("AND id IN (SELECT m.id FROM (SELECT coalesce((SELECT settings ->> "
            "'text_search' FROM tenant_settings WHERE tenant_id = $1), 'simple')::regconfig"
            " AS config) k, ticket_search_matches(websearch_to_tsquery(k.config, "
            f"${{n}}::text), k.config, {str(staff).lower()}) m)")


__all__ = [
    "MAX_QUERY_LENGTH",
    "SEARCH_KINDS",
    "TEXT_SEARCH_CONFIGS",
    "QueryRefused",
    "SearchHit",
    "check_query",
    "drop_contact",
    "index_contacts",
    "index_missing",
    "index_new_ticket",
    "index_organizations",
    "index_ticket_message",
    "index_tickets",
    "marked",
    "reindex",
    "search",
    "text_search_config",
    "ticket_filter",
]
