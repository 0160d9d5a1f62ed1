"""What SLA policies cost a ticket's opening: creates with 50 policies, the one that
matches tried last, against creates with one policy.

    python -m bench.sla_policies [--seconds 8] [--rounds 3]

One run starts a Postgres of its own (bench/common.py ``private_server``) and serves
``helpdesk serve --workers 1``. Two tenants of one database: one with only a default
policy; one with 49 policies whose conditions never hold (``tags contains never-<n>``),
then one that holds for every ticket (``channel is api``, tried last of the 50 by
position), then the default. Both on one calendar (Mon-Fri 09:00-17:00 Europe/Berlin),
so every opening counts business time. wrk (pinned as bench/http.py pins it, 16
connections) loads ``POST /v1/tickets`` on each tenant in alternating rounds; the ratio
is the medians'. Target: >= 0.9. Around each round the CPU time of the server's
process tree and of the Postgres server's is read and divided by the requests served
(as bench/cpu_per_request.py does): on a machine other work keeps busy, rates swing
with it, CPU per request much less.
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
from bench.cpu_per_request import postmaster, tree_cpu
from bench.http import CONNECTIONS, Wrk, lua, one_api

POLICIES = 50
HOURS = {"timezone": "Europe/Berlin",
         "weekly": {str(d): [["09:00", "17:00"]] for d in range(5)}}
TARGETS = {"first_reply_ms": 3_600_000, "next_reply_ms": 1_800_000,
           "resolution_ms": 28_800_000}
TICKET = ('{"subject": "bench", "body": "b", "source": "api", '
          '"requester": {"email": "b@example.com"}}')


async def _tenant(admin_url: str, name: str) -> Any:
    from handlers.tenants import create_tenant_as_operator
    return await create_tenant_as_operator(admin_url, name)


async def _post(http: httpx.AsyncClient, key: str, path: str, body: dict[str, Any]) -> Any:
    r = await http.post(path, headers={"Authorization": f"Bearer {key}"}, json=body)
    if r.status_code != 201:
        raise SystemExit(f"{path} refused: {r.text}")
    return r.json()


async def _policies(http: httpx.AsyncClient, key: str, many: bool) -> None:
    calendar = await _post(http, key, "/v1/calendars", {"name": "Office", "hours": HOURS})
    base = {"targets": TARGETS, "calendar_id": calendar["id"]}
    await _post(http, key, "/v1/sla-policies", {**base, "name": "Default", "default": True})
    if not many:
        return
    for i in range(POLICIES - 1):
        await _post(http, key, "/v1/sla-policies", {**base, "name": f"never {i}", "position": i,
                    "conditions": [{"field": "tags", "op": "contains", "value": f"never-{i}"}]})
    await _post(http, key, "/v1/sla-policies", {**base, "name": "API", "position": POLICIES,
                "conditions": [{"field": "channel", "op": "is", "value": "api"}]})


async def throughput(url: str, admin_url: str, seconds: float, rounds: int,
                     server_pid: int, postgres_pid: int) -> None:
    one, many = await _tenant(admin_url, "one policy"), await _tenant(admin_url, "50 policies")
    async with httpx.AsyncClient(base_url=url, timeout=30) as http:
        await _policies(http, one.admin_key.secret, many=False)
        await _policies(http, many.admin_key.secret, many=True)
    scripts = {name: lua([("POST", "/v1/tickets", TICKET)], [tenant.admin_key.secret])
               for name, tenant in (("1 policy", one), ("50 policies", many))}
    wrk = Wrk()
    rates: dict[str, list[float]] = {name: [] for name in scripts}
    p99s: dict[str, list[float]] = {name: [] for name in scripts}
    bad = dict.fromkeys(scripts, 0)
    cpu: dict[str, dict[str, list[float]]] = {
        name: {"server": [], "postgres": []} for name in scripts}
    for round_ in range(rounds):
        order = list(scripts) if round_ % 2 == 0 else list(reversed(scripts))
        for name in order:
            before = tree_cpu(server_pid), tree_cpu(postgres_pid)
            load = wrk.run(url + "/", seconds, scripts[name], CONNECTIONS)
            served = max(load.requests, 1)
            cpu[name]["server"].append((tree_cpu(server_pid) - before[0]) * 1000 / served)
            cpu[name]["postgres"].append((tree_cpu(postgres_pid) - before[1]) * 1000 / served)
            # Not fatal: on a loaded 2-core machine a few openings can time out waiting
            # for a pooled connection (503); they are counted and reported.
            bad[name] += load.bad
            rates[name].append(load.rps)
            p99s[name].append(load.p99_ms)
            print(f"round {round_ + 1} {name}: {load.rps:.0f} req/s, p99 {load.p99_ms:.1f} ms, "
                  f"{load.bad} bad, CPU ms per create: server {cpu[name]['server'][-1]:.2f}, "
                  f"Postgres {cpu[name]['postgres'][-1]:.2f}", flush=True)
    base, many_rate = statistics.median(rates["1 policy"]), statistics.median(rates["50 policies"])
    report("SLA policies: ticket creates", [
        {"figure": "POST /v1/tickets, 50 policies matching last vs 1 (req/s)",
         "value": round(many_rate), "baseline": round(base),
         "ratio": round(many_rate / base, 2), "target": ">= 0.9"},
        {"figure": "p99 ms, 50 policies vs 1",
         "value": round(statistics.median(p99s["50 policies"]), 1),
         "baseline": round(statistics.median(p99s["1 policy"]), 1), "ratio": "", "target": ""},
        {"figure": "bad answers (non-2xx, socket errors)", "value": bad["50 policies"],
         "baseline": bad["1 policy"], "ratio": "", "target": "0"},
        *({"figure": f"{side} CPU ms per create, 50 policies vs 1",
           "value": round(statistics.median(cpu["50 policies"][side]), 2),
           "baseline": round(statistics.median(cpu["1 policy"][side]), 2),
           "ratio": round(statistics.median(cpu["50 policies"][side])
                          / statistics.median(cpu["1 policy"][side]), 2),
           "target": "<= 1.11"} for side in ("server", "postgres")),
    ])


async def run(seconds: float, rounds: int) -> None:
    async with one_api() as api:
        await throughput(api.served.url, api.admin_url, seconds, rounds, api.served.proc.pid,
                             postmaster(int(api.server_url.rsplit(":", 1)[1].split("/")[0])))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seconds", type=float, default=8.0)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    asyncio.run(run(args.seconds, args.rounds))


if __name__ == "__main__":
    if not __package__:
        sys.exit("run as a module from the repository root: python -m bench.sla_policies")
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    main()
