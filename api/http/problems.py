"""RFC 9457 problem details: every error the API returns has this shape.

Domain and store errors become problems only here, in the exception handlers;
nothing below the API knows about HTTP.
"""

from __future__ import annotations

import logging
import re
from typing import Any

import orjson
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.responses import Response
from starlette.routing import compile_path

from api.http.problem_registry import PROBLEMS
from domain.contact import ContactMergedAway
from domain.errors import (
    AlreadyExists,
    DomainError,
    FollowUpRequired,
    InvalidTransition,
    NotFound,
    NotGroupMember,
    NotSolved,
    TicketClosed,
    TicketMergedAway,
    ValidationFailed,
)
from eventstore.blobs import StorageUnavailable
from eventstore.errors import (
    ConcurrencyError,
    EventStoreError,
    StoreUnavailable,
    TenantReadOnly,
)
from eventstore.keys import SubjectErased, WrongDataKey
from handlers.errors import (
    Conflict,
    Forbidden,
    Gone,
    HandlerError,
    Invalid,
    Missing,
    NotAuthenticated,
    TooLarge,
    TooManyAttempts,
    VersionMismatch,
)
from handlers.oidc_provider import ProviderUnavailable
from projections.search import QueryRefused

log = logging.getLogger("helpdesk.api")

PROBLEM_JSON = "application/problem+json"

_TITLES = {
    400: "Bad Request", 401: "Unauthorized", 403: "Forbidden", 404: "Not Found",
    405: "Method Not Allowed", 406: "Not Acceptable", 409: "Conflict", 410: "Gone",
    412: "Precondition Failed",
    413: "Content Too Large", 415: "Unsupported Media Type", 422: "Unprocessable Content",
    428: "Precondition Required", 429: "Too Many Requests", 500: "Internal Server Error",
    503: "Service Unavailable",
}

_HTTP_CODES = {
    400: "bad_request", 401: "unauthorized", 403: "forbidden", 404: "not_found",
    405: "method_not_allowed", 406: "not_acceptable", 409: "conflict",
    413: "body_too_large", 415: "unsupported_media_type", 422: "validation_failed",
    429: "rate_limited", 503: "unavailable",
}


# Domain errors a client can cause; any other DomainError (a corrupt stream, an unknown
# stored event type) is our fault and answers 500.
_DOMAIN_STATUS: dict[type[DomainError], int] = {
    NotFound: 404,
    InvalidTransition: 409,
    TicketClosed: 409,
    AlreadyExists: 409,
    FollowUpRequired: 409,
    NotGroupMember: 409,
    NotSolved: 409,
    TicketMergedAway: 409,
    ContactMergedAway: 409,
    ValidationFailed: 422,
}


# What each kind of handler refusal answers.
_HANDLER_STATUS: dict[type[HandlerError], int] = {
    NotAuthenticated: 401,
    Forbidden: 403,
    Missing: 404,
    Conflict: 409,
    Gone: 410,
    VersionMismatch: 412,
    TooLarge: 413,
    Invalid: 422,
    TooManyAttempts: 429,
    ProviderUnavailable: 502,
}


class Problem(Exception):
    """An error answer: HTTP status, a stable machine ``code`` and a human ``detail``."""

    def __init__(
        self,
        status: int,
        code: str,
        detail: str,
        *,
        headers: dict[str, str] | None = None,
        **extra: Any,
    ) -> None:
        super().__init__(detail)
        self.status = status
        self.code = code
        self.detail = detail
        self.headers = headers or {}
        self.extra = extra


def invalid_parameter(detail: str, *names: str, reason: str | None = None) -> Problem:
    """The 400 of query parameters whose values are refused together: its one shape
    (``parameters`` naming them, ``errors`` with one item each)."""
    return Problem(400, "invalid_parameter", detail, parameters=list(names),
                   errors=[{"loc": ["query", name], "msg": reason or detail,
                            "type": "value_error"} for name in names])


def problem_response(
    status: int,
    code: str,
    detail: str,
    *,
    instance: str | None = None,
    headers: dict[str, str] | None = None,
    **extra: Any,
) -> Response:
    """Render a problem+json response."""
    if code not in PROBLEMS:
        # The document promises only the registry's codes: say so where it shows.
        log.error("problem code %r is not in api/http/problem_registry.py", code)
    body: dict[str, Any] = {
        "type": f"https://helpdesk.dev/problems/{code}",
        "title": _TITLES.get(status, "Error"),
        "status": status,
        "code": code,
        "detail": detail,
    }
    if instance:
        body["instance"] = instance
    body.update(extra)
    return Response(orjson.dumps(body), status_code=status, media_type=PROBLEM_JSON,
                    headers=headers)


def _validation_errors(exc: RequestValidationError) -> list[dict[str, Any]]:
    out = []
    for err in exc.errors():
        loc = [str(p) for p in err.get("loc", ())]
        out.append({"loc": loc, "msg": err.get("msg", ""), "type": err.get("type", "")})
    return out


_HTTP_METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})


def _allowed_methods(request: Request, reported: str | None) -> str:
    """Every method the request's path answers, for a 405's ``Allow`` (RFC 9110).

    The router reports only the methods of the first route whose path matched, so a
    path served by several routes (GET and POST on a list) listed one of them; the
    documented operations name them all.
    """
    table: list[tuple[re.Pattern[str], frozenset[str]]] | None = getattr(
        request.app.state, "allow_table", None)
    if table is None:
        table = []
        for template, operations in request.app.openapi().get("paths", {}).items():
            documented = frozenset(m.upper() for m in operations) & _HTTP_METHODS
            table.append((compile_path(template)[0], documented))
        request.app.state.allow_table = table
    allowed = {m.strip() for m in (reported or "").split(",") if m.strip()}
    for pattern, methods in table:
        if pattern.match(request.url.path):
            allowed |= methods
    return ", ".join(sorted(allowed))


def install(app: FastAPI) -> None:
    """Register the exception handlers that turn every error into a problem."""

    @app.exception_handler(Problem)
    async def _problem(request: Request, exc: Problem) -> Response:
        return problem_response(exc.status, exc.code, exc.detail, instance=request.url.path,
                                headers=exc.headers, **exc.extra)

    @app.exception_handler(RequestValidationError)
    async def _invalid(request: Request, exc: RequestValidationError) -> Response:
        errors = _validation_errors(exc)
        body_error = any(e["loc"][:1] == ["body"] for e in errors)
        if errors and all(e["type"] == "json_invalid" for e in errors):
            return problem_response(400, "malformed_json", "the request body is not valid JSON",
                                    instance=request.url.path)
        if not body_error and errors:
            # Query, path and header problems are the client's request shape: 400,
            # naming the parameter and the value it was given.
            first, given = errors[0], exc.errors()[0].get("input")
            shown = f" (got {given!r})" if isinstance(given, str) and len(given) <= 200 else ""
            named = list(dict.fromkeys(e["loc"][1] if len(e["loc"]) > 1 else e["loc"][0]
                                       for e in errors))
            return problem_response(400, "invalid_parameter",
                                    f"invalid {'.'.join(first['loc'])}: {first['msg']}{shown}",
                                    instance=request.url.path, parameters=named,
                                    errors=errors)
        return problem_response(422, "validation_failed", "the request body is invalid",
                                instance=request.url.path, errors=errors)

    @app.exception_handler(StarletteHTTPException)
    async def _http(request: Request, exc: StarletteHTTPException) -> Response:
        code = _HTTP_CODES.get(exc.status_code, "error")
        headers = dict(exc.headers or {})
        if exc.status_code == 405:
            headers["Allow"] = _allowed_methods(request, headers.get("Allow"))
        return problem_response(exc.status_code, code, str(exc.detail),
                                instance=request.url.path, headers=headers)

    @app.exception_handler(QueryRefused)
    async def _query(request: Request, exc: QueryRefused) -> Response:
        return problem_response(400, exc.code, exc.reason, instance=request.url.path,
                                parameters=["q"])

    @app.exception_handler(StoreUnavailable)
    async def _unavailable(request: Request, exc: StoreUnavailable) -> Response:
        return problem_response(503, "database_unavailable",
                                "the database is unavailable; retry shortly",
                                instance=request.url.path, headers={"Retry-After": "1"})

    @app.exception_handler(TenantReadOnly)
    async def _read_only(request: Request, exc: TenantReadOnly) -> Response:
        # The operator paused the tenant's writes for a move (docs/operations.md).
        return problem_response(503, exc.code, "writes to this tenant are paused while "
                                "it moves; retry later (reads go on)",
                                instance=request.url.path,
                                headers={"Retry-After": str(exc.retry_after)})

    @app.exception_handler(StorageUnavailable)
    async def _no_storage(request: Request, exc: StorageUnavailable) -> Response:
        # Only uploads and downloads touch the file storage; nothing else fails with it.
        log.error("file storage unavailable on %s: %s", request.url.path, exc)
        return problem_response(503, exc.code, "the file storage is unavailable; retry "
                                "shortly", instance=request.url.path,
                                headers={"Retry-After": "1"})

    @app.exception_handler(ConcurrencyError)
    async def _conflict(request: Request, exc: ConcurrencyError) -> Response:
        return problem_response(409, "version_conflict", str(exc), instance=request.url.path)

    @app.exception_handler(SubjectErased)
    async def _erased(request: Request, exc: SubjectErased) -> Response:
        # The command would write personal data of a contact erased meanwhile.
        return problem_response(410, exc.code, "the contact this writes about was erased",
                                instance=request.url.path)

    @app.exception_handler(WrongDataKey)
    async def _wrong_kek(request: Request, exc: WrongDataKey) -> Response:
        # A configuration to fix, not a bug: this process's DATA_KEY does not unwrap the
        # data keys it needs (docs/erasure.md, rotation).
        log.error("data key mismatch on %s: %s", request.url.path, exc)
        return problem_response(503, exc.code,
                                "personal data cannot be opened: this server's key-"
                                "encryption key (DATA_KEY) is not the one that wrapped "
                                "its data keys", instance=request.url.path)

    @app.exception_handler(DomainError)
    async def _domain(request: Request, exc: DomainError) -> Response:
        status = _DOMAIN_STATUS.get(type(exc))
        if status is None:
            log.error("domain error on %s: %s", request.url.path, exc)
            return problem_response(500, "internal_error", "internal error",
                                    instance=request.url.path)
        extra: dict[str, Any] = {}
        if isinstance(exc, ValidationFailed):
            # One shape for the code: the rule's field as an ``errors`` item, as the
            # wire model's own refusals are.
            extra["errors"] = [{"loc": ["body", *(exc.field.split(".") if exc.field else [])],
                                "msg": exc.message, "type": "value_error"}]
        if isinstance(exc, TicketMergedAway):
            extra["merged_into"] = str(exc.merged_into)
        return problem_response(status, exc.code, exc.message, instance=request.url.path,
                                **extra)

    @app.exception_handler(HandlerError)
    async def _refused(request: Request, exc: HandlerError) -> Response:
        status = _HANDLER_STATUS.get(type(exc), 422)
        extra = dict(exc.extra)
        if isinstance(exc, Invalid):
            where = exc.field.split(".") if exc.field is not None else []
            extra["errors"] = [{"loc": ["body", *where], "msg": exc.reason, "type": exc.kind}]
        return problem_response(status, exc.code, exc.message, instance=request.url.path,
                                headers=exc.headers or None, **extra)

    @app.exception_handler(EventStoreError)
    async def _store(request: Request, exc: EventStoreError) -> Response:
        log.error("event store error on %s: %s", request.url.path, exc)
        return problem_response(500, "internal_error", "internal error",
                                instance=request.url.path)

    @app.exception_handler(Exception)
    async def _crash(request: Request, exc: Exception) -> Response:
        log.exception("unhandled error on %s", request.url.path)
        return problem_response(500, "internal_error", "internal error",
                                instance=request.url.path)
