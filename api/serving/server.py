"""uvicorn's options for this app, from the process settings."""

from __future__ import annotations

from typing import Any

from api.config import ProcessSettings
from api.feed.connection import MAX_CLIENT_MESSAGE
from api.serving.http import DeadlineProtocol
from api.serving.websocket import FeedWebSocketProtocol


def server_options(settings: ProcessSettings) -> dict[str, Any]:
    """Keyword arguments for ``uvicorn.run`` / ``uvicorn.Config``."""
    return {
        "http": DeadlineProtocol,
        "ws": FeedWebSocketProtocol,
        "ws_max_size": MAX_CLIENT_MESSAGE,
        "limit_concurrency": settings.max_connections,
    }
