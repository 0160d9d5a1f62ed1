"""What group-scoped access costs: the ticket list and a ticket command as an agent,
with the setting on against off, in one run.

    python -m bench.group_scope [--seconds 8] [--rounds 3] [--tickets 600]

One run starts a Postgres of its own (bench/common.py ``private_server``) and serves
``helpdesk serve --workers 1``. Two tenants of one database are made alike through
the API: three groups, ``--tickets`` tickets spread over them and over no group
(a quarter each), and an agent who is a member of the first group, with an agent key.
One tenant turns ``group_scoped_access`` on. wrk (pinned as bench/http.py pins it, 16
connections) loads, as that agent, ``GET /v1/tickets?limit=25`` and
``POST /v1/tickets/{id}/priority`` over the tickets of the agent's group, in
alternating rounds; each ratio is the medians' (on / off; target >= 0.9). With the
setting on, the agent's list reads only half the tenant's tickets (its group's and
those in no group), so a page walks past the others: that is part of what it costs.
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


async def _desk(http: httpx.AsyncClient, admin_url: str, name: str, tickets: int,
                scoped: bool) -> tuple[str, list[str]]:
    """A tenant made through the API; (the agent's key, its group's tickets)."""
    from handlers.tenants import create_tenant_as_operator
    tenant = await create_tenant_as_operator(admin_url, name)
    admin = {"Authorization": f"Bearer {tenant.admin_key.secret}"}

    async def post(path: str, body: dict[str, Any]) -> dict[str, Any]:
        r = await http.post(path, headers=admin, json=body)
        if r.status_code not in (200, 201):
            raise SystemExit(f"{path}: {r.status_code} {r.text}")
        return r.json()  # type: ignore[no-any-return]

    agent = await post("/v1/agents", {"email": f"ann@{name}.example", "name": "Ann"})
    key = await post("/v1/api-keys", {"name": "ann", "role": "agent", "agent_id": agent["id"]})
    groups = [await post("/v1/groups", {"name": f"g{i}",
                                        "members": [agent["id"]] if i == 0 else []})
              for i in range(3)]
    own: list[str] = []
    for i in range(tickets):
        group = None if i % 4 == 3 else groups[i % 4]["id"]
        t = await post("/v1/tickets", {"subject": f"bench {i}", "body": "b",
                                       "requester": {"email": "b@example.com"},
                                       **({"group_id": group} if group else {})})
        if group == groups[0]["id"]:
            own.append(t["id"])
    if scoped:
        doc = (await http.get("/v1/settings", headers=admin)).json()
        r = await http.put("/v1/settings", headers=admin,
                           json=doc | {"group_scoped_access": True})
        if r.status_code != 200:
            raise SystemExit(f"settings: {r.text}")
    return key["secret"], own


async def measure(url: str, admin_url: str, seconds: float, rounds: int, tickets: int) -> None:
    async with httpx.AsyncClient(base_url=url, timeout=60) as http:
        off_key, off_own = await _desk(http, admin_url, "off", tickets, scoped=False)
        on_key, on_own = await _desk(http, admin_url, "on", tickets, scoped=True)
        # The agent sees all of the tenant with the setting off, half with it on.
        for key, want in ((off_key, 25), (on_key, 25)):
            page = await http.get("/v1/tickets?limit=25",
                                  headers={"Authorization": f"Bearer {key}"})
            if page.status_code != 200 or len(page.json()["data"]) != want:
                raise SystemExit(f"list: {page.status_code} {page.text[:200]}")

    def priorities(own: list[str]) -> list[tuple[str, str, str | None]]:
        return [("POST", f"/v1/tickets/{t}/priority", f'{{"priority": "{p}"}}')
                for t in own for p in ("low", "high")]

    scripts = {
        ("list", "off"): lua([("GET", "/v1/tickets?limit=25", None)], [off_key]),
        ("list", "on"): lua([("GET", "/v1/tickets?limit=25", None)], [on_key]),
        ("command", "off"): lua(priorities(off_own), [off_key]),
        ("command", "on"): lua(priorities(on_own), [on_key]),
    }
    rates, bad = alternating(url, scripts, seconds, rounds, label=" ".join)
    rows = []
    for what, figure in (("list", "GET /v1/tickets?limit=25 as an agent (req/s)"),
                         ("command", "POST priority as an agent (req/s)")):
        on, off = (statistics.median(rates[(what, s)]) for s in ("on", "off"))
        rows.append({"figure": f"{figure}, scoped on vs off", "value": round(on),
                     "baseline": round(off), "ratio": round(on / off, 2), "target": ">= 0.9"})
    report("group-scoped access", rows)
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
    parser.add_argument("--tickets", type=int, default=600)
    args = parser.parse_args()
    asyncio.run(run(args.seconds, args.rounds, args.tickets))


if __name__ == "__main__":
    if not __package__:
        sys.exit("run as a module from the repository root: python -m bench.group_scope")
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    main()
