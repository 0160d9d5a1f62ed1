"""The helpdesk as ``helpdesk serve`` runs it (the composition root, uvicorn with the
service's protocols), plus the baseline of bench/attachments.py: two trivial
streaming routes in the same process, which exist here only, never in the product.

    python -m bench.attachments_server --port P

- ``POST /bench/sink`` reads the body as it arrives and counts it (nothing kept);
- ``GET /bench/source?size=N`` streams N bytes, in the pieces a download sends;
- ``POST /bench/sink-sealed`` and ``GET /bench/source-sealed?size=N`` do the same and
  also what no design of file storage can skip: the body's sha256, and each 256 KiB
  chunk sealed (or opened) with AES-256-GCM, in the event loop as the upload does it.
  They separate what storage costs from what the file's hash and seal cost.

Settings from the environment, as ``helpdesk serve`` reads them (set MAX_BODY_BYTES
above the file size: the sink is held to it, uploads are not).
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import uuid
from collections.abc import AsyncIterator

from fastapi import APIRouter, Request
from fastapi.responses import StreamingResponse
from starlette.requests import ClientDisconnect

from api.app import create_app
from api.config import ProcessSettings
from api.root import ProcessRole, running
from api.serving.server import server_options
from eventstore.blobs import CHUNK_BYTES, new_key, open_chunk, seal_chunk

baseline = APIRouter()
PIECE = bytes(range(256)) * (CHUNK_BYTES // 256)


@baseline.post("/bench/sink")
async def sink(request: Request) -> dict[str, int]:
    size = 0
    try:
        async for piece in request.stream():
            size += len(piece)
    except ClientDisconnect:  # wrk ends a run mid-request
        pass
    return {"size": size}


_KEY, _TENANT, _BLOB = new_key(), uuid.uuid4(), uuid.uuid4()
_SEALED = seal_chunk(_KEY, _TENANT, _BLOB, 0, False, PIECE)


@baseline.post("/bench/sink-sealed")
async def sink_sealed(request: Request) -> dict[str, object]:
    digest, size, buffer, n = hashlib.sha256(), 0, bytearray(), 0
    try:
        async for piece in request.stream():
            size += len(piece)
            digest.update(piece)
            buffer += piece
            while len(buffer) > CHUNK_BYTES:
                seal_chunk(_KEY, _TENANT, _BLOB, n, False, bytes(buffer[:CHUNK_BYTES]))
                del buffer[:CHUNK_BYTES]
                n += 1
    except ClientDisconnect:
        pass
    seal_chunk(_KEY, _TENANT, _BLOB, n, True, bytes(buffer))
    return {"size": size, "sha256": digest.hexdigest()}


@baseline.get("/bench/source-sealed")
async def source_sealed(size: int) -> StreamingResponse:
    async def pieces() -> AsyncIterator[bytes]:
        left = size
        while left > 0:
            yield open_chunk(_KEY, _TENANT, _BLOB, 0, False, _SEALED)[:left]
            left -= len(PIECE)

    return StreamingResponse(pieces(), media_type="application/octet-stream",
                             headers={"Content-Length": str(size)})


@baseline.get("/bench/source")
async def source(size: int) -> StreamingResponse:
    async def pieces() -> AsyncIterator[bytes]:
        left = size
        while left > 0:
            yield PIECE[:left]
            left -= len(PIECE)

    return StreamingResponse(pieces(), media_type="application/octet-stream",
                             headers={"Content-Length": str(size)})


async def serve(port: int) -> None:
    import uvicorn

    settings = ProcessSettings(port=port)
    async with running(settings, ProcessRole.SERVE) as services:
        app = create_app(settings, services=services)
        app.include_router(baseline)
        config = uvicorn.Config(app, host=settings.host, port=port, log_config=None,
                                log_level=settings.log_level.lower(), access_log=False,
                                lifespan="on", **server_options(settings))
        await uvicorn.Server(config).serve()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--port", type=int, required=True)
    import uvloop

    with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
        runner.run(serve(parser.parse_args().port))


if __name__ == "__main__":
    main()
