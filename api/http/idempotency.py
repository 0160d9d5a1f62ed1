"""``Idempotency-Key`` for side-effecting requests.

A record is keyed by (tenant, API key, method + route template, key): the same key
value sent with another API key, or to another route, is another record. It holds the
request's fingerprint (sha256 of the request path and its canonical body) and the
answer: status, the body's bytes as they were sent, and the headers worth replaying.
It is written in the command's own transaction, so a command and its recorded answer
commit together or not at all. A replay sends the first answer's bytes exactly.

An answer that holds a secret (an issued API key) is kept only sealed
(``api.http.replay_seal``): a replay opens the seal and sends the same bytes, or, when the
seal cannot be opened here, answers the problem the route gave for that case.

Concurrency: before looking for a record, the request takes a transaction-level
advisory lock on the key with try-lock (NOWAIT) semantics. The holder runs; a request
with the same key meanwhile gets 409 ``idempotency_in_flight`` at once. The lock is
released when the holder's transaction ends, after its commit is visible, so a later
request reads the record and replays exactly the first answer. If the holder fails,
nothing was written and the next request runs afresh. There is no in-flight marker
row, hence nothing to clean up after a crash.

Erasing a contact withholds the recorded answers that name it or its tickets
(``scheduler.idempotency.withhold_answers``): such a record keeps only a refusal,
410 ``subject_erased``, which a replay answers as it does a seal it cannot open.

Records expire after 24 hours; an expired record is ignored and replaced. The
``purge_expired`` query deletes them in batches.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import orjson
from fastapi import Request, Response

from api.http.auth import Principal
from api.http.problems import Problem
from api.http.replay_seal import open_answer, seal_answer
from api.http.reply import JsonReply, json_response
from eventstore.sqlfile import load_queries
from eventstore.store import UnitOfWork

Q = load_queries(Path(__file__).with_name("queries.sql"))

HEADER = "Idempotency-Key"
TTL_SECONDS = 24 * 3600
_KEY = re.compile(r"^[\x21-\x7e]{1,255}$")
# Headers of the first answer that a replay repeats.
_REPLAYED_HEADERS = ("etag", "location")


def _refusal(problem: Problem) -> dict[str, Any]:
    return {"status": problem.status, "code": problem.code, "detail": problem.detail,
            "extra": problem.extra}


def _replay(row: Any, ident: tuple[Any, ...], server_secret: str | None) -> Response:
    """The recorded answer again, byte for byte (or its refusal, if sealed shut)."""
    status, headers = row["response_status"], dict(row["response_headers"])
    if row["response_sealed"]:
        content = open_answer(server_secret, ident, row["response_bytes"])
        if content is None:
            refusal = row["refusal"]
            raise Problem(refusal["status"], refusal["code"], refusal["detail"],
                          **refusal["extra"])
    elif row["response_bytes"] is not None:
        content = bytes(row["response_bytes"])
    else:
        # Recorded before answers were kept as bytes (migration 0100); such records
        # expire within a day.
        content = orjson.dumps(row["response_body"])
    return json_response(status, content, headers, replayed=True)


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
    session: UnitOfWork,
    payload: Any,
    work: Callable[[], Awaitable[JsonReply]],
    *,
    server_secret: str | None = None,
) -> Response:
    """Run ``work`` once per Idempotency-Key, inside ``session``'s transaction.

    Without the header, ``work`` simply runs. With it: a completed record is replayed
    (``Idempotent-Replayed: true``), a record with another fingerprint is 422
    ``idempotency_key_reused``, a request holding the key is 409
    ``idempotency_in_flight``; otherwise ``work`` runs and its answer is recorded.
    ``server_secret`` (``IDEMPOTENCY_SECRET``) seals answers that hold a secret.
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
        return _replay(row, ident, server_secret)
    reply = await work()
    content = reply.content()
    kept = {k: v for k, v in reply.headers.items() if k.lower() in _REPLAYED_HEADERS}
    stored: bytes | None = content
    refusal = None
    if reply.secret_lost is not None:
        stored = None if server_secret is None else seal_answer(server_secret, ident, content)
        refusal = _refusal(reply.secret_lost)
    # By the unit of work's ``write``: with a deferring one, in its COMMIT's message.
    await session.write(Q["idempotency_put"], *ident, digest, reply.status, stored,
                        reply.secret_lost is not None, refusal, kept, float(TTL_SECONDS))
    return json_response(reply.status, content, reply.headers)


__all__ = ["HEADER", "TTL_SECONDS", "fingerprint", "idempotent", "route_of"]
