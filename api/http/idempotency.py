"""``Idempotency-Key`` for side-effecting requests.

A record is keyed by (tenant, API key, method + route template, key) and holds the
request's fingerprint (sha256 of the request path and its canonical body) and the
answer: status, body and the headers worth replaying. It is written in the command's
own transaction, so a command and its recorded answer commit together or not at all.

Concurrency: before looking for a record, the request takes a transaction-level
advisory lock on the key with try-lock (NOWAIT) semantics. The holder runs; a request
with the same key meanwhile gets 409 ``idempotency_in_flight`` at once. The lock is
released when the holder's transaction ends, after its commit is visible, so a later
request reads the record and replays exactly the first answer. If the holder fails,
nothing was written and the next request runs afresh. There is no in-flight marker
row, hence nothing to clean up after a crash.

Records expire after 24 hours; an expired record is ignored and replaced. The
``purge_expired`` query deletes them in batches.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
from fastapi import Request, Response

from api.http.auth import Principal
from api.http.problems import Problem
from eventstore.sqlfile import load_queries
from eventstore.store import Session
from projections.views import dumps

Q = load_queries(Path(__file__).with_name("queries.sql"))

HEADER = "Idempotency-Key"
TTL_SECONDS = 24 * 3600
_KEY = re.compile(r"^[\x21-\x7e]{1,255}$")
# Headers of the first answer that a replay repeats.
_REPLAYED_HEADERS = ("etag", "location")


@dataclass(frozen=True, slots=True)
class JsonReply:
    """An answer a command produced, before it becomes a response."""

    status: int
    body: Any
    headers: dict[str, str] = field(default_factory=dict)

    def response(self, *, replayed: bool = False) -> Response:
        headers = dict(self.headers)
        if replayed:
            headers["Idempotent-Replayed"] = "true"
        return Response(dumps(self.body), status_code=self.status,
                        media_type="application/json", headers=headers)


def fingerprint(request: Request, payload: Any) -> bytes:
    """sha256 over the concrete path and the canonical (parsed, key-sorted) body."""
    canonical = orjson.dumps([request.url.path, payload], option=orjson.OPT_SORT_KEYS)
    return hashlib.sha256(canonical).digest()


def route_of(request: Request) -> str:
    """``METHOD /route/{template}``: one key may be reused on different routes."""
    route = request.scope.get("route")
    template = getattr(route, "path", request.url.path)
    return f"{request.method} {template}"


async def idempotent(
    request: Request,
    principal: Principal,
    session: Session,
    payload: Any,
    work: Callable[[], Awaitable[JsonReply]],
) -> Response:
    """Run ``work`` once per Idempotency-Key, inside ``session``'s transaction.

    Without the header, ``work`` simply runs. With it: a completed record is replayed
    (``Idempotent-Replayed: true``), a record with another fingerprint is 422
    ``idempotency_key_reused``, a request holding the key is 409
    ``idempotency_in_flight``; otherwise ``work`` runs and its answer is recorded.
    """
    key = request.headers.get(HEADER)
    if key is None:
        return (await work()).response()
    if not _KEY.match(key):
        raise Problem(400, "invalid_idempotency_key",
                      "Idempotency-Key must be 1 to 255 visible ASCII characters")
    conn = session.conn
    ident = (principal.tenant_id, principal.key_id, route_of(request), key)
    if not await conn.fetchval(Q["idempotency_try_lock"], *ident):
        raise Problem(409, "idempotency_in_flight",
                      "a request with this Idempotency-Key is still in progress; retry later",
                      headers={"Retry-After": "1"})
    digest = fingerprint(request, payload)
    row = await conn.fetchrow(Q["idempotency_get"], *ident)
    if row is not None:
        if bytes(row["fingerprint"]) != digest:
            raise Problem(422, "idempotency_key_reused",
                          "this Idempotency-Key was used with a different request")
        recorded = JsonReply(row["response_status"], row["response_body"],
                             dict(row["response_headers"]))
        return recorded.response(replayed=True)
    reply = await work()
    kept = {k: v for k, v in reply.headers.items() if k.lower() in _REPLAYED_HEADERS}
    await conn.execute(Q["idempotency_put"], *ident, digest, reply.status,
                       orjson.Fragment(dumps(reply.body)), kept, float(TTL_SECONDS))
    return reply.response()


__all__ = ["HEADER", "TTL_SECONDS", "JsonReply", "fingerprint", "idempotent", "route_of"]
