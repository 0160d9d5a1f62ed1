"""The request body limit: bodies over ``MAX_BODY_BYTES`` are refused with 413."""

from __future__ import annotations

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from api.http import problems


class BodyLimit:
    """Refuse request bodies over ``limit`` bytes with 413, before reading them whole."""

    def __init__(self, app: ASGIApp, limit: int) -> None:
        self.app = app
        self.limit = limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
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

