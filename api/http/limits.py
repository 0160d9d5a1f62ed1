"""The request body limit: bodies over ``MAX_BODY_BYTES`` are refused with 413.

Uploads (``UPLOAD_PATH``) are not held to it: they are streamed to storage, never read
whole, and held to the tenant's ``attachments.max_file_bytes`` as they arrive
(handlers/attachments.py). Nor is inbound mail, held to ``MAIL_MAX_BYTES`` by its route
(api/routes/mail.py) as it reads the body whole (``whole_body``), as the Slack events
route does under its own limit.
"""

from __future__ import annotations

import re

from starlette.requests import ClientDisconnect, Request
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from api.http import problems

UPLOAD_PATH = re.compile(r"^/v1/((portal/|widget/[^/]+/)?uploads|inbound/mail/[^/]+)$")
"""The upload routes (api/routes/attachments.py) and inbound mail's."""


class BodyLimit:
    """Refuse request bodies over ``limit`` bytes with 413, before reading them whole."""

    def __init__(self, app: ASGIApp, limit: int, unbounded: re.Pattern[str] | None = None
                 ) -> None:
        self.app = app
        self.limit = limit
        self.unbounded = unbounded

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or (
                self.unbounded is not None and scope.get("method") == "POST"
                and self.unbounded.match(scope.get("path", ""))):
            await self.app(scope, receive, send)
            return
        headers = dict(scope.get("headers") or [])
        declared = headers.get(b"content-length")
        if declared is not None and (not declared.isdigit() or int(declared) > self.limit):
            await problems.problem_response(
                413, "body_too_large", f"request bodies are limited to {self.limit} bytes",
                instance=scope.get("path"),
            )(scope, receive, send)
            return
        seen = 0

        async def limited() -> Message:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.limit:
                    raise problems.Problem(413, "body_too_large",
                                           f"request bodies are limited to {self.limit} bytes")
            return message

        await self.app(scope, limited, send)


async def whole_body(request: Request, limit: int, too_large: str, cut_off: str) -> bytes:
    """The body of a request that a route reads whole, refused with 413 saying
    ``too_large`` once it passes ``limit`` bytes (declared or as it arrives), and with
    400 saying ``cut_off`` when the client goes before it is all sent."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise problems.Problem(413, "body_too_large", too_large)
    data = bytearray()
    try:
        async for piece in request.stream():
            data += piece
            if len(data) > limit:
                raise problems.Problem(413, "body_too_large", too_large)
    except ClientDisconnect as exc:
        raise problems.Problem(400, "upload_interrupted", cut_off) from exc
    return bytes(data)
