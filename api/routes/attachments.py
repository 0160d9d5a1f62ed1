"""Files: upload one, and get an attachment back (docs/attachments.md).

- ``POST /v1/uploads`` (staff and intake keys), ``POST /v1/portal/uploads`` (a signed-in
  contact), ``POST /v1/widget/{tenant_id}/uploads`` (a widget session): the body is the
  file (its ``Content-Type`` declared, its name in ``?name=``), or a
  ``multipart/form-data`` body whose file part is the file. Streamed to storage as it
  arrives; the answer is the upload (id, name, size, type, sha256). A message or a new
  ticket carries it by naming its id in ``attachments``.
- ``GET /v1/attachments/{id}`` (agents, admins), ``GET /v1/portal/attachments/{id}``,
  ``GET /v1/widget/{tenant_id}/attachments/{id}``: the file, as an attachment with a
  safe name, ``nosniff``, the ETag of its hash and ``Range`` support; inline
  (``?disposition=inline``) only for png, jpeg, gif and webp.

Who may read which file is row-level security's answer (handlers/attachments.py).
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from typing import Annotated, Literal
from urllib.parse import quote
from uuid import UUID

from fastapi import APIRouter, Query, Request, Response
from fastapi.responses import StreamingResponse
from starlette.requests import ClientDisconnect

from api.http import commands
from api.http.answer_headers import LOCATION, sends
from api.http.auth import Principal
from api.http.deps import Authorized, CustomerAuthorized, ServicesDep
from api.http.multipart import MultipartError, boundary_of, file_part
from api.http.problem_docs import errors
from api.http.problems import Problem, invalid_parameter
from api.http.reply import JsonReply
from api.http.routing import StrictRoute
from api.http.widget import WidgetAuthorized
from api.root import Services
from api.schemas.attachments import UploadOut
from domain.attachment import INLINE_TYPES, NAME_MAX, safe_name
from eventstore.store import UnitOfWork
from handlers import attachments

router = APIRouter(tags=["attachments"], route_class=StrictRoute)

MULTIPART_SLACK = 64 * 1024
"""Bytes a multipart body may hold beyond its file (boundaries, headers, small fields)."""

SENT_AS_IS = INLINE_TYPES | {"application/pdf", "text/plain"}
"""Types a download names as they are; anything else goes as
``application/octet-stream``, so no browser renders it (HTML, SVG, scripts)."""

FileName = Annotated[str | None, Query(max_length=4 * NAME_MAX, description=(
    "The file's name, for a raw body (a multipart body's file part names its own)."))]
Disposition = Annotated[Literal["attachment", "inline"], Query(description=(
    "`inline` only for png, jpeg, gif and webp (422 `not_inline` otherwise)."))]


async def _upload(request: Request, services: Services, principal: Principal,
                  name: str | None) -> Response:
    tenant = principal.tenant_id
    content_type = request.headers.get("content-type")
    try:
        boundary = boundary_of(content_type) if content_type else None
    except MultipartError as exc:
        raise Problem(400, "invalid_multipart", str(exc)) from exc
    declared_size = _content_length(request)
    stream = request.stream()
    if boundary is None:
        if name is None:
            raise Problem(422, "validation_failed", "a raw upload names its file in ?name=",
                          errors=[{"loc": ["query", "name"], "msg": "required",
                                   "type": "missing"}])
        body: AsyncIterator[bytes] = stream
        declared_type = content_type
    else:
        if name is not None:
            raise invalid_parameter("a multipart upload's file part names its file; ?name= "
                                    "is for a raw body", "name")
        body, declared_type = stream, None
    command = attachments.ReceiveFile(name=name or "-", declared_type=declared_type,
                                      uploader=principal.actor, at=services.clock.now())
    try:
        if boundary is not None:
            part = await file_part(stream, boundary)
            command = attachments.ReceiveFile(name=part.filename,
                                              declared_type=part.content_type,
                                              uploader=principal.actor, at=command.at)
            body = part.data
            declared_size = (None if declared_size is None
                             else max(declared_size - MULTIPART_SLACK, 0))
        found = await attachments.check_upload(services.store, tenant, command, declared_size)
        received = await attachments.receive(services.store, services.files, tenant, command,
                                             body, found)
    except MultipartError as exc:
        raise Problem(400, "invalid_multipart", str(exc)) from exc
    except ClientDisconnect as exc:
        # Nobody reads this answer; what was received is gone already.
        raise Problem(400, "upload_interrupted", "the upload was cut off") from exc
    recorded = False

    async def work(uow: UnitOfWork) -> JsonReply:
        nonlocal recorded
        done = await attachments.record_upload(uow, received, command)
        recorded = True
        return JsonReply(201, done, {"Location": f"{_files_prefix(request)}/{done['id']}"})

    try:
        # The Idempotency-Key's record compares the file itself: a retry of the same
        # upload replays the first answer (and its own copy is forgotten).
        answer = await commands.run(request, services, principal, received.payload(), work)
    except BaseException:
        await attachments.discard(services.store, tenant, received)
        raise
    if not recorded:
        await attachments.discard(services.store, tenant, received)
    return answer


def _files_prefix(request: Request) -> str:
    return re.sub(r"/uploads$", "/attachments", request.url.path)


def _content_length(request: Request) -> int | None:
    value = request.headers.get("content-length")
    return int(value) if value is not None and value.isdigit() else None


_RANGE = re.compile(r"^bytes=(\d*)-(\d*)$")


def byte_range(header: str | None, size: int) -> tuple[int, int] | None:
    """The one range a ``Range`` header asks for, inclusive (None: the whole file; a
    header that is not one plain byte range is ignored, as RFC 9110 allows); 416 for
    a range the file does not reach."""
    if header is None:
        return None
    match = _RANGE.match(header.strip())
    if match is None or match.groups() == ("", ""):
        return None
    first, last = match.groups()
    if first == "":
        start, end = max(size - int(last), 0), size - 1
    else:
        start = int(first)
        end = size - 1 if last == "" else min(int(last), size - 1)
    if start >= size or start > end:
        raise Problem(416, "range_not_satisfiable", f"the file has {size} bytes",
                      headers={"Content-Range": f"bytes */{size}"})
    return start, end


async def _download(request: Request, services: Services, principal: Principal,
                    attachment_id: UUID, disposition: str) -> Response:
    tenant, actor = principal.tenant_id, principal.actor
    file = await attachments.open_file(services.store, services.files, tenant, actor,
                                       attachment_id)
    if disposition == "inline" and file.content_type not in INLINE_TYPES:
        raise Problem(422, "not_inline", f"a {file.content_type} file is only sent as an "
                      "attachment; inline is for png, jpeg, gif and webp",
                      parameters=["disposition"])
    etag = f'"{file.sha256}"'
    headers = {
        "ETag": etag, "Accept-Ranges": "bytes", "X-Content-Type-Options": "nosniff",
        "Content-Disposition": (f'{disposition}; filename="{safe_name(file.name)}"; '
                                f"filename*=UTF-8''{quote(file.name, safe='')}"),
        "Content-Security-Policy": "default-src 'none'; sandbox",
        "Cache-Control": "private, no-cache",
    }
    media_type = file.content_type if file.content_type in SENT_AS_IS \
        else "application/octet-stream"
    if request.headers.get("if-none-match") == etag:
        return Response(status_code=304, headers=headers)
    wanted = byte_range(request.headers.get("range"), file.size)
    if_range = request.headers.get("if-range")
    if wanted is not None and if_range is not None and if_range != etag:
        wanted = None  # the file asked about is not this one: send it whole
    start, end = wanted if wanted is not None else (0, file.size - 1)
    headers["Content-Length"] = str(end - start + 1)
    status = 200
    if wanted is not None:
        status = 206
        headers["Content-Range"] = f"bytes {start}-{end}/{file.size}"
    # The first piece is read before the answer starts, so storage that is down (or a
    # broken file) is still a problem answer, not a connection cut after a 200.
    pieces = attachments.read_range(file, tenant, actor, start, end)
    first = await anext(pieces)

    async def body() -> AsyncIterator[bytes]:
        yield first
        async for piece in pieces:
            yield piece

    return StreamingResponse(body(), status_code=status, media_type=media_type,
                             headers=headers)


UPLOAD_ERRORS = errors(400, 404, 409, 413, 415, 503) | sends(201, required=(LOCATION,))
DOWNLOAD_ERRORS = errors(404, 410, 416, 503)


@router.post("/v1/uploads", status_code=201, response_model=UploadOut,
             responses=UPLOAD_ERRORS, summary="Upload a file, to attach to a message")
async def upload(request: Request, services: ServicesDep, principal: Authorized,
                 name: FileName = None) -> Response:
    """The body is the file (``?name=`` its name, ``Content-Type`` its declared type) or
    a ``multipart/form-data`` body with one file part. Limited to the tenant's
    ``attachments.max_file_bytes`` (413 ``file_too_large``). Not attached within a day,
    an upload is deleted."""
    return await _upload(request, services, principal, name)


@router.get("/v1/attachments/{attachment_id}", responses=DOWNLOAD_ERRORS,
            response_class=StreamingResponse, summary="A file attached to a message")
async def download(attachment_id: UUID, request: Request, services: ServicesDep,
                   principal: Authorized, disposition: Disposition = "attachment") -> Response:
    """Any attached file of the tenant, and the caller's own unattached uploads."""
    return await _download(request, services, principal, attachment_id, disposition)


@router.post("/v1/portal/uploads", status_code=201, response_model=UploadOut,
             responses=UPLOAD_ERRORS, summary="Upload a file as the signed-in contact")
async def portal_upload(request: Request, services: ServicesDep,
                        principal: CustomerAuthorized, name: FileName = None) -> Response:
    return await _upload(request, services, principal, name)


@router.get("/v1/portal/attachments/{attachment_id}", responses=DOWNLOAD_ERRORS,
            response_class=StreamingResponse,
            summary="A file of a public message on one of the contact's tickets")
async def portal_download(attachment_id: UUID, request: Request, services: ServicesDep,
                          principal: CustomerAuthorized,
                          disposition: Disposition = "attachment") -> Response:
    return await _download(request, services, principal, attachment_id, disposition)


@router.post("/v1/widget/{tenant_id}/uploads", status_code=201, response_model=UploadOut,
             responses=UPLOAD_ERRORS, summary="Upload a file in a widget session")
async def widget_upload(tenant_id: UUID, request: Request, services: ServicesDep,
                        principal: WidgetAuthorized, name: FileName = None) -> Response:
    return await _upload(request, services, principal, name)


@router.get("/v1/widget/{tenant_id}/attachments/{attachment_id}", responses=DOWNLOAD_ERRORS,
            response_class=StreamingResponse,
            summary="A file of a public message on a ticket the widget session opened")
async def widget_download(tenant_id: UUID, attachment_id: UUID, request: Request,
                          services: ServicesDep, principal: WidgetAuthorized,
                          disposition: Disposition = "attachment") -> Response:
    return await _download(request, services, principal, attachment_id, disposition)
