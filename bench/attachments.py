"""Files: upload and download throughput of a 10 MiB file against trivial streaming
routes of the same server, and a message with one 200 KiB attachment against one
without.

    python -m bench.attachments [--seconds 4] [--rounds 2] [--messages-only]

One run starts a Postgres of its own (bench/common.py ``private_server``), migrates a
fresh database, creates a tenant, and serves the helpdesk in one process with
bench/attachments_server.py: the service as ``helpdesk serve`` runs it, plus the
baseline routes (a sink that reads a body as it arrives, a source that streams bytes),
which live in bench/ only. wrk (bench/http.py ``Wrk``) loads each case in turn, in
alternating rounds:

- ``POST /v1/uploads`` of a 10 MiB file (streamed, hashed, sealed per chunk, written
  as chunk rows in Postgres) against ``POST /bench/sink`` of the same bytes;
- ``GET /v1/attachments/{id}`` of a 10 MiB file (chunks read, opened, streamed)
  against ``GET /bench/source`` of as many bytes;
- both again on a second server process keeping files in a directory
  (``FILE_STORAGE=filesystem``), against that server's own baseline routes;
- ``POST /v1/tickets/{id}/messages`` naming one 200 KiB upload (each upload made
  beforehand, distinct bytes, each attached once) against the same message without.

A second baseline per file case separates storage from the work every design must
do: ``POST /bench/sink-sealed`` hashes the body and seals each chunk, and
``GET /bench/source-sealed`` opens each chunk it sends, in the same process.

Throughput is MiB/s (requests per second times 10 MiB); the message cases are req/s,
and CPU milliseconds per message, of the server process and of the Postgres backends
serving it (``bench/cpu_per_request.py``), read around each message case: a figure
that a machine busy with other work moves less than it moves a rate.
``--messages-only`` runs the two message cases alone.
Targets: files at 0.5x their baseline or better, a message with a file at 0.7x.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import statistics
import tempfile
from contextlib import ExitStack
from pathlib import Path

import httpx

from bench.common import fresh_database, private_server, report
from bench.cpu_per_request import cpu_by_process, postmaster, tree_cpu
from bench.http import TICKET_BODY, Load, Served, Wrk, lua, serving

MIB = 1024 * 1024
FILE = 10 * MIB
SMALL = 200 * 1024
FILE_CONNECTIONS = 4
MESSAGE_CONNECTIONS = 16
TICKETS = 50
MESSAGE_BODY = '{"body": "On it."}'


def _upload_script(path: str, key: str) -> str:
    """POST ``path`` with a 10 MiB body (made once by the script), as ``key``."""
    return f"""
local body = string.rep("0123456789abcdef", {FILE // 16})
request = function()
  return wrk.format("POST", [==[{path}]==], {{["Authorization"] = "Bearer {key}",
    ["Content-Type"] = "application/octet-stream"}}, body)
end
"""


def _messages_with(tickets: list[str], uploads: list[str], key: str) -> str:
    """One message per request, each naming the next unused upload."""
    ids = ",\n".join(f'"{u}"' for u in uploads)
    targets = ",\n".join(f'"{t}"' for t in tickets)
    return f"""
local uploads = {{
{ids}
}}
local tickets = {{
{targets}
}}
local n = 0
request = function()
  n = n + 1
  local ticket = tickets[(n % #tickets) + 1]
  local upload = uploads[((n - 1) % #uploads) + 1]
  local body = '{{"body": "On it.", "attachments": ["' .. upload .. '"]}}'
  return wrk.format("POST", "/v1/tickets/" .. ticket .. "/messages",
    {{["Authorization"] = "Bearer {key}", ["Content-Type"] = "application/json"}}, body)
end
"""


async def _upload_many(http: httpx.AsyncClient, count: int, size: int) -> list[str]:
    """``count`` uploads of ``size`` distinct bytes each; their ids."""
    ids: list[str] = []
    gate = asyncio.Semaphore(8)

    async def one() -> None:
        async with gate:
            r = await http.post("/v1/uploads", params={"name": "shot.png"},
                                content=os.urandom(size))
            r.raise_for_status()
            ids.append(r.json()["id"])

    await asyncio.gather(*(one() for _ in range(count)))
    return ids


async def run(seconds: float, rounds: int, messages_only: bool = False) -> None:
    with private_server(max_connections="300", shared_buffers="256MB") as server_url, \
            ExitStack() as stack:
        postgres = postmaster(int(server_url.rsplit(":", 1)[1].split("/")[0]))
        async with fresh_database(server_url) as db:
            from handlers.tenants import create_tenant_as_operator

            tenant = await create_tenant_as_operator(db.admin_url, "bench")
            key = tenant.admin_key.secret
            env = {"DATABASE_URL": db.runtime_url, "LOG_LEVEL": "warning",
                   "RUN_SCHEDULER": "false", "MAX_BODY_BYTES": str(2 * FILE),
                   "DB_POOL_MAX": str(MESSAGE_CONNECTIONS + 4), "HTTP_BODY_TIMEOUT": "120"}
            ours = stack.enter_context(serving(["-m", "bench.attachments_server"], env))
            files_dir = Path(tempfile.mkdtemp(prefix="hd-bench-files-"))
            stack.callback(shutil.rmtree, files_dir, ignore_errors=True)
            on_disk = stack.enter_context(serving(["-m", "bench.attachments_server"], env | {
                "FILE_STORAGE": "filesystem", "FILE_STORAGE_DIR": str(files_dir)}))
            await ours.ready()
            await on_disk.ready()
            wrk = Wrk()
            stack.callback(shutil.rmtree, wrk.dir, ignore_errors=True)
            runs: dict[str, list[Load]] = {}
            # CPU ms per request of a message case: (server process, Postgres backends).
            cpu: dict[str, list[tuple[float, float]]] = {}

            def load(case: str, script: str, connections: int,
                     warm: str | None = None, server: Served | None = None) -> Load:
                url = (server or ours).url
                wrk.run(url, 1, warm or script, connections)
                before = tree_cpu(ours.proc.pid), cpu_by_process(postgres).get("backends", 0.0)
                got = wrk.run(url, seconds, script, connections)
                after = tree_cpu(ours.proc.pid), cpu_by_process(postgres).get("backends", 0.0)
                runs.setdefault(case, []).append(got)
                spent = ""
                if case.startswith("message") and got.requests:
                    per = (1000 * (after[0] - before[0]) / got.requests,
                           1000 * (after[1] - before[1]) / got.requests)
                    cpu.setdefault(case, []).append(per)
                    spent = f", CPU ms/request: server {per[0]:.2f}, postgres {per[1]:.2f}"
                print(f"  {case}: {got.rps:.1f} req/s, p50 {got.p50_ms:.1f} ms, "
                      f"bad {got.bad}{spent}", flush=True)
                return got

            async with httpx.AsyncClient(base_url=ours.url, timeout=120, headers={
                    "Authorization": f"Bearer {key}"}) as http:
                tickets = []
                for _ in range(TICKETS):
                    r = await http.post("/v1/tickets", content=TICKET_BODY,
                                        headers={"Content-Type": "application/json"})
                    tickets.append(r.raise_for_status().json()["id"])
                big = (await _upload_many(http, 1, FILE))[0]
                async with httpx.AsyncClient(base_url=on_disk.url, timeout=120, headers={
                        "Authorization": f"Bearer {key}"}) as disk_http:
                    big_on_disk = (await _upload_many(disk_http, 1, FILE))[0]
                files = []
                for where, server, file_id in (("postgres", ours, big),
                                               ("filesystem", on_disk, big_on_disk)):
                    files += [
                        (f"upload 10 MiB ({where})", server,
                         _upload_script("/v1/uploads?name=f.bin", key)),
                        (f"baseline: stream in 10 MiB ({where} server)", server,
                         _upload_script("/bench/sink", key)),
                        (f"download 10 MiB ({where})", server,
                         lua([("GET", f"/v1/attachments/{file_id}", None)], [key])),
                        (f"baseline: stream out 10 MiB ({where} server)", server,
                         lua([("GET", f"/bench/source?size={FILE}", None)], [key])),
                        (f"hashed and sealed: stream in 10 MiB ({where} server)", server,
                         _upload_script("/bench/sink-sealed", key)),
                        (f"opened: stream out 10 MiB ({where} server)", server,
                         lua([("GET", f"/bench/source-sealed?size={FILE}", None)], [key])),
                    ]
                plain = lua([("POST", f"/v1/tickets/{t}/messages", MESSAGE_BODY)
                             for t in tickets], [key])
                for round_ in range(rounds):
                    print(f"round {round_ + 1} of {rounds}", flush=True)
                    for case, server, script in ([] if messages_only else
                                                 files[::-1] if round_ % 2 else files):
                        load(case, script, FILE_CONNECTIONS, server=server)
                    without = load("message without a file", plain, MESSAGE_CONNECTIONS)
                    # Enough fresh uploads for the case (and its warm second) to attach
                    # each once: twice what the rate of a message without one would use,
                    # and no fewer than a quiet machine's rate needs (a round that ran
                    # slow must not leave the next too few: they would answer 409).
                    rate = max(without.rps, 200.0)
                    warm_n = int(rate * 2)
                    need = int(rate * seconds * 2)
                    uploads = await _upload_many(http, warm_n + need, SMALL)
                    load("message with a 200 KiB file",
                         _messages_with(tickets, uploads[warm_n:], key), MESSAGE_CONNECTIONS,
                         warm=_messages_with(tickets, uploads[:warm_n], key))

    def med(case: str) -> float:
        return statistics.median(r.rps for r in runs[case])

    def row(figure: str, case: str, base: str, scale: float, unit: str,
            target: str) -> dict[str, object]:
        value, baseline = med(case) * scale, med(base) * scale
        return {"figure": figure, "value": f"{value:.1f} {unit}",
                "baseline": f"{baseline:.1f} {unit}", "ratio": round(value / baseline, 2),
                "target": target}

    def cpu_row(figure: str, which: int) -> dict[str, object]:
        value, baseline = (statistics.median(c[which] for c in cpu[case])
                           for case in ("message with a 200 KiB file", "message without a file"))
        # As the rates' ratio: the baseline's cost over the case's.
        return {"figure": figure, "value": f"{value:.2f} ms", "baseline": f"{baseline:.2f} ms",
                "ratio": round(baseline / value, 2), "target": ""}

    bad = sum(r.bad for loads in runs.values() for r in loads)
    message_rows = [
        row("message with one 200 KiB file (baseline: without)",
            "message with a 200 KiB file", "message without a file", 1, "req/s", ">= 0.7"),
        cpu_row("CPU per message, server process (ratio: without / with)", 0),
        cpu_row("CPU per message, Postgres backends (ratio: without / with)", 1),
    ]
    rows = [] if messages_only else [
        row(f"{what} of 10 MiB, {where} (baseline: a trivial streaming route)",
            f"{what} 10 MiB ({where})", f"baseline: stream {way} 10 MiB ({where} server)",
            10, "MiB/s", ">= 0.5")
        for where in ("postgres", "filesystem")
        for what, way in (("upload", "in"), ("download", "out"))
    ] + [
        row(f"{what} of 10 MiB, {where} (baseline: the same route {how})",
            f"{what} 10 MiB ({where})", f"{how}: stream {way} 10 MiB ({where} server)",
            10, "MiB/s", "")
        for where in ("postgres", "filesystem")
        for what, way, how in (("upload", "in", "hashed and sealed"),
                               ("download", "out", "opened"))
    ]
    rows += message_rows
    report(f"files (wrk, {FILE_CONNECTIONS} connections for files, {MESSAGE_CONNECTIONS} "
           f"for messages, {seconds:g} s per case, {rounds} round(s), 1 process, "
           f"medians; {bad} bad answers)", rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seconds", type=float, default=4.0, help="per case (default 4)")
    parser.add_argument("--rounds", type=int, default=2, help="alternating rounds (default 2)")
    parser.add_argument("--messages-only", action="store_true",
                        help="only the message cases, without and with a file")
    args = parser.parse_args()
    asyncio.run(run(args.seconds, args.rounds, args.messages_only))


if __name__ == "__main__":
    main()
