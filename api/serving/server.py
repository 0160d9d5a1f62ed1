"""uvicorn's options for this app, from the process settings."""

from __future__ import annotations

from typing import Any

from api.config import Settings
from api.feed.connection import MAX_CLIENT_MESSAGE
from api.serving.http import deadline_protocol
from api.serving.websocket import FeedWebSocketProtocol


def server_options(settings: Settings) -> dict[str, Any]:
    """Keyword arguments for ``uvicorn.run`` / ``uvicorn.Config``."""
    return {
        "http": deadline_protocol(settings.http_head_timeout, settings.http_body_timeout),
        "ws": FeedWebSocketProtocol,
        "ws_max_size": MAX_CLIENT_MESSAGE,
        "limit_concurrency": settings.max_connections,
    }
