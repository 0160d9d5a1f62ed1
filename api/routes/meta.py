"""``/v1/meta``: what the API publishes about itself.

``GET /v1/meta/error-codes`` is the problem registry (``api.http.problem_registry``):
every ``code`` a problem+json answer can carry, with its status, title and when it
is answered, so a client can map codes without reading prose.
"""

from __future__ import annotations

from fastapi import APIRouter, Response
from pydantic import BaseModel

from api.http.deps import Authorized
from api.http.problem_docs import errors
from api.http.problem_registry import published
from api.http.reply import JsonReply
from api.http.routing import StrictRoute

router = APIRouter(prefix="/v1/meta", tags=["meta"], route_class=StrictRoute)


class ErrorCodeOut(BaseModel):
    code: str
    status: int
    title: str
    description: str


class ErrorCodeList(BaseModel):
    data: list[ErrorCodeOut]


@router.get("/error-codes", response_model=ErrorCodeList, responses=errors(),
            summary="Every problem code the API answers with")
async def error_codes(principal: Authorized) -> Response:
    """The problem registry: each `code` with the HTTP status it comes with, a title
    and when it is answered. The extra members each code's body carries are in the
    OpenAPI document (`components.schemas`, `Problem<status>`)."""
    return JsonReply(200, {"data": published()}).response()
