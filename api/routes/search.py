"""Full-text search: ``GET /v1/search?q=...&type=ticket|contact|organization``.

Postgres full-text search over the inline index (projections/search.py): best first,
paged by keyset over (rank, id) with a cursor signed for this query, each result with
its API document (as ``GET`` of it shows it) and a short snippet. Agents and admins
search internal notes too. Reads the primary, like the ticket list: a thing is found
as soon as its command answered.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal
from uuid import UUID

import orjson
from fastapi import APIRouter, Query, Response
from pydantic import BaseModel, Field

from api.http import commands
from api.http.deps import Authorized, Paging, ServicesDep
from api.http.pagination import paginate_rank, scope_of
from api.http.problem_docs import errors
from api.http.routing import StrictRoute
from api.schemas import checked_by_domain
from api.schemas.people import (
    ContactOut,
    OrganizationOut,
    contact_document,
    organization_document,
)
from api.schemas.tickets import TicketOut
from domain.contact import Contact
from domain.validation import NOT_BLANK
from domain.values import Role
from projections.search import (
    MAX_QUERY_LENGTH,
    SearchHit,
    check_query,
    text_search_config,
)
from projections.search import search as find
from projections.views import dumps

router = APIRouter(tags=["search"], route_class=StrictRoute)

STAFF = frozenset({Role.AGENT.value, Role.ADMIN.value})
"""The roles whose searches cover internal notes."""

QUERY_HELP = ("Words, all required; `\"a phrase\"` in quotes; `-word` excludes; `or` "
              "between words accepts either (Postgres `websearch_to_tsquery`). "
              f"At most {MAX_QUERY_LENGTH} characters.")


class _Result(BaseModel):
    id: UUID
    rank: float = Field(description="higher is better; a subject match outranks a body "
                                    "match, a name one a phone one")
    snippet: str = Field(description="a short extract, HTML: the text escaped, the matched "
                                     "words in `<mark>`")


class TicketResultOut(_Result):
    type: Literal["ticket"]
    ticket: TicketOut


class ContactResultOut(_Result):
    type: Literal["contact"]
    contact: ContactOut


class OrganizationResultOut(_Result):
    type: Literal["organization"]
    organization: OrganizationOut


SearchResultOut = Annotated[TicketResultOut | ContactResultOut | OrganizationResultOut,
                            Field(discriminator="type")]


class SearchPage(BaseModel):
    data: list[SearchResultOut]
    next_cursor: str | None


def _result(kind: str, hit: SearchHit) -> dict[str, Any]:
    found = hit.found
    document: Any
    if isinstance(found, bytes):
        document = orjson.Fragment(found)  # a ticket's stored document, as it is
    elif isinstance(found, Contact):
        document = contact_document(found)
    else:
        document = organization_document(found)
    return {"type": kind, "id": str(hit.id), "rank": hit.rank, "snippet": hit.snippet,
            kind: document}


@router.get("/v1/search", response_model=SearchPage, responses=errors(),
            summary="Full-text search, best match first")
async def search(
    services: ServicesDep,
    principal: Authorized,
    paging: Paging,
    q: Annotated[str, Query(max_length=MAX_QUERY_LENGTH, description=QUERY_HELP,
                            json_schema_extra=checked_by_domain(NOT_BLANK))],
    type: Annotated[Literal["ticket", "contact", "organization"], Query(description=(
        "what to find: tickets (subject, messages, tags, the requester's name and "
        "e-mail), contacts (name, e-mail, phone) or organizations (name, domains)"))
    ] = "ticket",
) -> Response:
    staff = principal.role in STAFF
    scope = scope_of(principal.tenant_id, "search", {"q": q, "type": type, "staff": staff})
    codec, limit, cursor = services.cursors, paging.limit, paging.cursor
    after = codec.decode_rank(scope, cursor) if cursor is not None else None
    async with commands.reading(services, principal) as s:
        config = await text_search_config(s.conn, principal.tenant_id)
        await check_query(s.conn, q, config)
        hits = await find(s.conn, principal.tenant_id, type, q, config, staff=staff,
                          after=after, limit=limit + 1)
    page, next_cursor = paginate_rank(codec, scope, hits, limit, lambda h: (h.rank, h.id))
    data = [_result(type, h) for h in page]
    # As GET writes them (UTC times end in ``Z``); a ticket's document passes through.
    return Response(dumps({"data": data, "next_cursor": next_cursor}),
                    media_type="application/json")
