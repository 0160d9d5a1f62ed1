"""What a scoped API key costs: the ticket list with a scoped agent key against the
same agent's unscoped (role) key, in one run.

    python -m bench.scoped_keys [--seconds 8] [--rounds 3] [--tickets 300]

One run starts a Postgres of its own (bench/common.py ``private_server``) and serves
``helpdesk serve --workers 1``. One tenant is made through the API: an agent, two keys
acting as that agent (one of its role, one issued with ``scopes`` ``ticket:list`` and
``self:read``) and ``--tickets`` tickets. wrk (pinned as bench/http.py pins it, 16
connections) loads ``GET /v1/tickets?limit=25`` with each key in alternating rounds;
the ratio is the medians' (scoped / role; target >= 0.97). The path is the one every
request takes: the key's principal (its scopes with it) comes from the key cache, and
the guard checks the operation's permission against the role and then the scopes.
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

LIST = "/v1/tickets?limit=25"


async def _desk(http: httpx.AsyncClient, admin_url: str, tickets: int) -> tuple[str, str]:
    """A tenant made through the API; (the role key, the scoped key) of one agent."""
    from handlers.tenants import create_tenant_as_operator
    tenant = await create_tenant_as_operator(admin_url, "scopes")
    admin = {"Authorization": f"Bearer {tenant.admin_key.secret}"}

    async def post(path: str, body: dict[str, Any]) -> dict[str, Any]:
        r = await http.post(path, headers=admin, json=body)
        if r.status_code not in (200, 201):
            raise SystemExit(f"{path}: {r.status_code} {r.text}")
        return r.json()  # type: ignore[no-any-return]

    agent = await post("/v1/agents", {"email": "ann@scopes.example", "name": "Ann"})
    role = await post("/v1/api-keys", {"name": "role", "role": "agent",
                                       "agent_id": agent["id"]})
    scoped = await post("/v1/api-keys", {"name": "scoped", "role": "agent",
                                         "agent_id": agent["id"],
                                         "scopes": ["ticket:list", "self:read"]})
    for i in range(tickets):
        await post("/v1/tickets", {"subject": f"bench {i}", "body": "b",
                                   "requester": {"email": "b@example.com"}})
    return role["secret"], scoped["secret"]


async def measure(url: str, admin_url: str, seconds: float, rounds: int, tickets: int) -> None:
    async with httpx.AsyncClient(base_url=url, timeout=60) as http:
        role_key, scoped_key = await _desk(http, admin_url, tickets)
        for key in (role_key, scoped_key):
            page = await http.get(LIST, headers={"Authorization": f"Bearer {key}"})
            if page.status_code != 200 or len(page.json()["data"]) != 25:
                raise SystemExit(f"list: {page.status_code} {page.text[:200]}")
        # The scoped key is refused what its scopes leave out: it is the scoped path.
        refused = await http.get("/v1/agents", headers={"Authorization": f"Bearer {scoped_key}"})
        if refused.status_code != 403 or refused.json()["code"] != "insufficient_scope":
            raise SystemExit(f"scoped key not scoped: {refused.status_code} {refused.text}")

    scripts = {"role": lua([("GET", LIST, None)], [role_key]),
               "scoped": lua([("GET", LIST, None)], [scoped_key])}
    rates, bad = alternating(url, scripts, seconds, rounds)
    scoped, role = (statistics.median(rates[k]) for k in ("scoped", "role"))
    report("scoped API keys", [{
        "figure": f"GET {LIST} as an agent (req/s), scoped key vs role key",
        "value": round(scoped), "baseline": round(role), "ratio": round(scoped / role, 2),
        "target": ">= 0.97"}])
    if bad:
        # Socket timeouts of wrk (2 s) on a loaded machine count here too.
        print(f"WARNING: {bad} requests were answered with errors or timed out",
              file=sys.stderr)


async def run(seconds: float, rounds: int, tickets: int) -> None:
    async with one_api() as api:
        await measure(api.served.url, api.admin_url, seconds, rounds, tickets)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seconds", type=float, default=8.0)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--tickets", type=int, default=300)
    args = parser.parse_args()
    asyncio.run(run(args.seconds, args.rounds, args.tickets))


if __name__ == "__main__":
    if not __package__:
        sys.exit("run as a module from the repository root: python -m bench.scoped_keys")
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    main()
