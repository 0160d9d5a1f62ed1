"""``GET /metrics``: the process's Prometheus metrics (see ``api.ops.metrics``)."""

from __future__ import annotations

from fastapi import APIRouter
from prometheus_client.exposition import CONTENT_TYPE_LATEST
from starlette.responses import Response

from api.http.deps import ServicesDep
from api.http.routing import StrictRoute

router = APIRouter(route_class=StrictRoute, tags=["health"])


@router.get("/metrics", summary="Prometheus metrics", response_class=Response,
            responses={200: {"description": "The metrics in Prometheus' text format",
                             "content": {CONTENT_TYPE_LATEST: {"schema": {"type": "string"}}}}})
async def metrics_endpoint(services: ServicesDep) -> Response:
    await services.metrics.refresh(services)
    body = services.metrics.render()
    return Response(body, media_type=CONTENT_TYPE_LATEST)
