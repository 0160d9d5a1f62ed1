"""``WS /v1/stream``: authenticate, then hand the socket to a ``StreamConnection``.

The key comes from ``Authorization: Bearer`` or, for browsers that cannot set
headers, from a first message ``{"op": "auth", "token": ...}``. Failures close the
socket with a reason: 4400 (the first message was not an auth op), 4401 (unknown or
revoked key, or none in time), 4403 (the role may not read the feed), 1013 (the
database is unavailable; try again later).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import Any

import orjson
from fastapi import APIRouter, WebSocket
from starlette.websockets import WebSocketDisconnect

from api.config import ProcessSettings
from api.feed import messages as msg
from api.feed.connection import StreamConnection
from api.http.access import permission_for, roles_for
from api.http.auth import Principal, resolve
from api.http.headers import bearer_token
from api.http.routing import StrictRoute
from api.root import Services
from eventstore.errors import StoreUnavailable

router = APIRouter(route_class=StrictRoute)

FEED_OPERATION = "WS /v1/stream"
AUTH_TIMEOUT = 10.0


class Refused(Exception):
    def __init__(self, code: int, reason: str) -> None:
        super().__init__(reason)
        self.code = code
        self.reason = reason


async def first_auth_message(websocket: WebSocket) -> dict[str, Any]:
    """The client's first message, which must be ``{"op": "auth", ...}`` within
    ``AUTH_TIMEOUT``; else ``Refused`` (4401 for no message in time, 4400 for another).
    The portal's feed (api/feed/customer.py) opens the same way."""
    try:
        text = await asyncio.wait_for(websocket.receive_text(), AUTH_TIMEOUT)
    except TimeoutError:
        raise Refused(4401, "no credentials: send {\"op\": \"auth\", \"token\": ...}") from None
    except KeyError:
        raise Refused(4400, "the first message must be a JSON text frame") from None
    try:
        op = orjson.loads(text)
    except orjson.JSONDecodeError:
        op = None
    if not isinstance(op, dict) or op.get("op") != "auth":
        raise Refused(4400, "the first message must be {\"op\": \"auth\", \"token\": ...}")
    return op


async def resolved(lookup: Awaitable[Principal | None], unknown: str) -> Principal:
    """The principal a feed's credential resolves to; else ``Refused``: 1013 while the
    database is unavailable, 4401 saying ``unknown`` for none. The portal's feed
    (api/feed/customer.py) resolves its token the same way."""
    try:
        principal = await lookup
    except StoreUnavailable:
        raise Refused(1013, "the database is unavailable; try again later") from None
    if principal is None:
        raise Refused(4401, unknown)
    return principal


async def _first_message_token(websocket: WebSocket) -> str:
    op = await first_auth_message(websocket)
    token = op.get("token")
    if not isinstance(token, str) or not token:
        raise Refused(4401, "auth needs a token")
    return token


async def _authenticate(websocket: WebSocket, services: Services) -> tuple[Principal, str]:
    secret = bearer_token(websocket.headers.get("authorization"))
    if secret is None:
        secret = await _first_message_token(websocket)
    principal = await resolved(resolve(services, secret), "the API key is unknown or revoked")
    if principal.barred is not None:
        raise Refused(4403, principal.barred[1])
    if principal.role not in roles_for(FEED_OPERATION):
        raise Refused(4403, f"role {principal.role!r} may not read the feed")
    needed = permission_for(FEED_OPERATION)
    if principal.scopes is not None and needed not in principal.scopes:
        raise Refused(4403, f"this API key's scopes do not include {needed!r}")
    return principal, secret


@router.websocket("/v1/stream")
async def stream(websocket: WebSocket) -> None:
    """The live event feed (see docs/websocket.md for the protocol)."""
    services: Services = websocket.state.services
    hub = services.hub
    if hub is None:  # only a serving process has a hub
        await websocket.close(1011, "this process does not serve the feed")
        return
    await websocket.accept()
    try:
        principal, secret = await _authenticate(websocket, services)
    except Refused as exc:
        await websocket.close(exc.code, exc.reason)
        return
    except WebSocketDisconnect:
        return
    settings: ProcessSettings = services.settings
    await websocket.send_text(msg.control(
        "authenticated", tenant_id=str(principal.tenant_id), role=principal.role,
        heartbeat_seconds=settings.ws_heartbeat_seconds,
        replay_window=settings.ws_replay_window))
    await StreamConnection(websocket, services, hub, principal, secret).run()
