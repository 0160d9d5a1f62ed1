"""The merged look-up: reading a ticket that others were merged into against reading a
ticket of the same message count that had nothing merged, in one run.

    python -m bench.merged_thread [--seconds 8] [--rounds 3] [--sources 5] [--messages 40]

One run starts a Postgres of its own (bench/common.py ``private_server``) and serves
``helpdesk serve --workers 1`` (bench/http.py ``one_api``). One tenant is made through
the API with four targets and four plain tickets. Each target has ``--sources``
tickets merged into it; the target and each source hold an equal share of
``--messages`` (the opening message and public replies), so the target's thread
references most of its messages from the merged tickets. Each plain ticket holds
``--messages`` of its own. wrk (pinned as bench/http.py pins it, 16 connections)
loads, as the tenant's admin key, the thread (``GET /v1/tickets/{id}/messages?limit=100``,
one page holding all of it) and the ticket (``GET /v1/tickets/{id}``) of the targets
against those of the plain tickets, in alternating rounds; each ratio is the medians'
(merged / plain; target >= 0.9).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
from typing import Any

import httpx

from bench.common import report
from bench.http import alternating, lua, one_api

PAIRS = 4
PAGE = 100


async def _desk(http: httpx.AsyncClient, admin_url: str, sources: int, messages: int
                ) -> tuple[str, list[str], list[str]]:
    """The tenant made through the API: (its admin key, the targets, the plain tickets)."""
    from handlers.tenants import create_tenant_as_operator
    tenant = await create_tenant_as_operator(admin_url, "merged")
    admin = {"Authorization": f"Bearer {tenant.admin_key.secret}"}

    async def post(path: str, body: dict[str, Any]) -> dict[str, Any]:
        r = await http.post(path, headers=admin, json=body)
        if r.status_code not in (200, 201):
            raise SystemExit(f"{path}: {r.status_code} {r.text}")
        return r.json()  # type: ignore[no-any-return]

    async def ticket(n: int, subject: str) -> str:
        """A ticket with ``n`` messages: its opening and ``n - 1`` replies."""
        t = await post("/v1/tickets", {"subject": subject, "body": f"{subject}: opened",
                                       "requester": {"email": "b@example.com"}})
        for i in range(n - 1):
            await post(f"/v1/tickets/{t['id']}/messages",
                       {"body": f"{subject}: reply {i} about the printer tray"})
        return str(t["id"])

    share = max(1, messages // (sources + 1))
    targets, plain = [], []
    for p in range(PAIRS):
        target = await ticket(messages - share * sources, f"target {p}")
        for s in range(sources):
            source = await ticket(share, f"source {p}.{s}")
            await post(f"/v1/tickets/{source}/merge", {"into": target})
        targets.append(target)
        plain.append(await ticket(messages, f"plain {p}"))
    for tid in targets + plain:  # both kinds of thread are whole on one page
        r = await http.get(f"/v1/tickets/{tid}/messages?limit={PAGE}", headers=admin)
        if r.status_code != 200 or len(r.json()["data"]) != messages:
            raise SystemExit(f"thread of {tid}: {r.status_code} {r.text[:200]}")
    return tenant.admin_key.secret, targets, plain


async def measure(url: str, admin_url: str, seconds: float, rounds: int, sources: int,
                  messages: int) -> None:
    if messages > PAGE or messages < sources + 1:
        raise SystemExit(f"--messages is {sources + 1} to {PAGE}")
    async with httpx.AsyncClient(base_url=url, timeout=60) as http:
        key, targets, plain = await _desk(http, admin_url, sources, messages)

    def reads(ids: list[str], what: str) -> str:
        path = f"/v1/tickets/{{}}/messages?limit={PAGE}" if what == "thread" else \
            "/v1/tickets/{}"
        return lua([("GET", path.format(t), None) for t in ids], [key])

    scripts = {(what, kind): reads(ids, what)
               for what in ("thread", "ticket")
               for kind, ids in (("merged", targets), ("plain", plain))}
    rates, bad = alternating(url, scripts, seconds, rounds, label=" ".join)
    rows = []
    for what, figure in (("thread", f"GET messages, {messages} of {sources + 1} tickets "
                                    "(req/s)"),
                         ("ticket", f"GET ticket with {sources} merged into it (req/s)")):
        merged, alone = (statistics.median(rates[(what, k)]) for k in ("merged", "plain"))
        rows.append({"figure": f"{figure}, merged vs plain", "value": round(merged),
                     "baseline": round(alone), "ratio": round(merged / alone, 2),
                     "target": ">= 0.9"})
    report("merged look-up", rows)
    print("load average: " + " ".join(f"{x:.2f}" for x in os.getloadavg()))
    if bad:
        # Socket timeouts of wrk (2 s) on a loaded machine count here too.
        print(f"WARNING: {bad} requests were answered with errors or timed out",
              file=sys.stderr)


async def run(seconds: float, rounds: int, sources: int, messages: int) -> None:
    async with one_api() as api:
        await measure(api.served.url, api.admin_url, seconds, rounds, sources, messages)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seconds", type=float, default=8.0)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--sources", type=int, default=5)
    parser.add_argument("--messages", type=int, default=40)
    args = parser.parse_args()
    asyncio.run(run(args.seconds, args.rounds, args.sources, args.messages))


if __name__ == "__main__":
    if not __package__:
        sys.exit("run as a module from the repository root: python -m bench.merged_thread")
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    main()
