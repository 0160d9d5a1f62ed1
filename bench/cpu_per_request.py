"""CPU per request of ticket writes (and the list), server and Postgres, for two trees of
the product.

    python -m bench.cpu_per_request BEFORE_TREE AFTER_TREE [--seconds 5] [--rounds 3]

Each tree (a checkout with its ``.venv``) serves in turn (``helpdesk serve --workers
1``) on one Postgres of the bench's own, from a database of its own that it migrated
and seeded itself (bench/writes_seed.py: its schema and its write path), one tenant
with 200 tickets; wrk (pinned as in bench/http.py, 16 connections) sends creates for a known
e-mail, messages, creates for a new e-mail and the first page of the ticket list each
time. Around each case the CPU time of the server's process tree and of the Postgres
server's process tree is read, and divided by the requests served: unlike rates, CPU
per request holds up on a machine that other work keeps busy. Rounds alternate which
tree goes first; medians, and the second tree's figures as ratios to the first's.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import time
from pathlib import Path

import httpx
import psutil

from bench.common import free_port, private_server, seeded_desk
from bench.http import NEW_EMAIL, TICKET_BODY, Wrk, lua

CASES = ("create, known e-mail", "message", "create, new e-mail", "list of 25")


def cpu_by_process(pid: int) -> dict[str, float]:
    """User and system CPU seconds of a process tree by kind; for a Postgres server,
    the backends serving clients, and each background process (walwriter,
    checkpointer, autovacuum, ...) by its title. A process that ended between two reads
    is missing from the second."""
    out: dict[str, float] = {}
    try:
        root = psutil.Process(pid)
        procs = [root, *root.children(recursive=True)]
    except psutil.NoSuchProcess:
        return out
    for p in procs:
        try:
            title = " ".join(p.cmdline()) or p.name()
            times = p.cpu_times()
        except psutil.NoSuchProcess:
            continue
        kind = ("backends" if "(" in title or "idle" in title or "authentication" in title
                else title.replace("postgres: ", "").split("  ")[0].strip())
        out[kind] = out.get(kind, 0.0) + times.user + times.system
    return out


def tree_cpu(pid: int) -> float:
    """User and system CPU seconds of a process and its children."""
    return sum(cpu_by_process(pid).values())


def postmaster(port: int) -> int:
    for c in psutil.net_connections("tcp"):
        if c.laddr and c.laddr.port == port and c.status == "LISTEN" and c.pid:
            return int(c.pid)
    raise SystemExit(f"no Postgres listening on {port}")


def start(tree: Path, port: int, env: dict[str, str]) -> subprocess.Popen[bytes]:
    """``helpdesk serve`` from ``tree`` with its own virtualenv, one process."""
    return subprocess.Popen([str(tree / ".venv/bin/python"), "-m", "api.cli.main", "serve",
                             "--workers", "1", "--port", str(port)],
                            cwd=tree, env=os.environ | env, stdout=subprocess.DEVNULL)


def wait_ready(url: str, proc: subprocess.Popen[bytes]) -> None:
    for _ in range(600):
        if proc.poll() is not None:
            raise SystemExit(f"server exited with {proc.returncode}")
        try:
            if httpx.get(url + "/health/live", timeout=1).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.05)
    raise SystemExit(f"server on {url} did not start")


async def run(trees: list[Path], seconds: float, rounds: int) -> None:
    with private_server(max_connections="300", shared_buffers="256MB") as server_url:
        pg = postmaster(int(server_url.rsplit(":", 1)[1].split("/")[0]))
        desks: list[tuple[str, dict[str, str]]] = []
        for tree in trees:
            # Each tree migrates and seeds its own database, with its own code.
            desk = await asyncio.to_thread(seeded_desk, tree, server_url, 0, 0, timeout=600)
            key, tickets = desk["main"]["key"], desk["main"]["tickets"]
            desks.append((desk["runtime_url"], {
                CASES[0]: lua([("POST", "/v1/tickets", TICKET_BODY)], [key]),
                CASES[1]: lua([("POST", f"/v1/tickets/{t}/messages", '{"body": "On it."}')
                               for t in tickets], [key]),
                CASES[2]: NEW_EMAIL.replace("KEY", key),
                CASES[3]: lua([("GET", "/v1/tickets?limit=25", None)], [key]),
            }))
        load = Wrk()
        found: dict[tuple[str, int], list[tuple[float, float, float]]] = {}
        for round_ in range(rounds):
            order = list(range(len(trees)))
            if round_ % 2:
                order.reverse()
            for i in order:
                runtime_url, scripts = desks[i]
                env = {"DATABASE_URL": runtime_url, "LOG_LEVEL": "warning",
                       "RUN_SCHEDULER": "false", "DB_POOL_MAX": "20"}
                port = free_port()
                url = f"http://127.0.0.1:{port}"
                proc = start(trees[i], port, env)
                try:
                    wait_ready(url, proc)
                    for case, script in scripts.items():
                        load.run(url, 1, script)  # warm
                        s0, p0 = tree_cpu(proc.pid), tree_cpu(pg)
                        r = load.run(url, seconds, script)
                        s1, p1 = tree_cpu(proc.pid), tree_cpu(pg)
                        n = max(r.requests, 1)
                        row = (r.rps, 1000 * (s1 - s0) / n, 1000 * (p1 - p0) / n)
                        found.setdefault((case, i), []).append(row)
                        print(f"round {round_} tree {i} {case:22} req/s {row[0]:6.0f} "
                              f"server ms/req {row[1]:5.2f} postgres ms/req {row[2]:5.2f} "
                              f"bad {r.bad} load {os.getloadavg()[0]:.1f}", flush=True)
                finally:
                    proc.terminate()
                    proc.wait()

    print(f"\nmedians of {rounds} rounds; ratio: tree 1 / tree 0")
    for case in CASES:
        med = [[statistics.median(r[k] for r in found[(case, i)]) for k in range(3)]
               for i in range(len(trees))]
        for k, name in enumerate(("req/s", "server CPU ms/request", "Postgres CPU ms/request")):
            print(f"{case:22} {name:24} {med[0][k]:8.2f} {med[1][k]:8.2f} "
                  f"{med[1][k] / med[0][k]:6.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("before", type=Path)
    parser.add_argument("after", type=Path)
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    asyncio.run(run([args.before.resolve(), args.after.resolve()], args.seconds, args.rounds))


if __name__ == "__main__":
    main()
