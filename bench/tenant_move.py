"""Moving a tenant: ``helpdesk tenant export`` then ``import``, in events per second,
against ``helpdesk audit export`` alone of the same tenant in the same run. Target:
move >= 0.5x the audit export's rate. The import with ``--rebuild`` (its async read
models rebuilt from the events after it) is measured beside it.

The tenant's history is bench/projections.py's generated ticket lives (about six
events a ticket), loaded once into a source database; every round exports it with
the audit export (the baseline), then exports it with the tenant export and imports
it into a fresh target database on the same server (made and migrated outside the
timing). The figures are medians over ``--rounds``; the cases take turns so load
from elsewhere falls on both alike. The files are written to a temporary directory,
as an operator writes them. The import with ``--rebuild`` goes into a second fresh
target, split into its transaction and the rebuild after it (from the rebuild's
first progress call).

The move as an operator runs it, ``helpdesk tenant export ... | helpdesk tenant import
...`` (docs/operations.md), is two processes of the command line with an OS pipe
between them, each with its own interpreter start; it is measured against
``helpdesk audit export --tenant T > file`` run the same way, as a process.

    python -m bench.tenant_move [--events 50000] [--rounds 3]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import orjson

from api.cli import audit
from api.cli import tenant as tenant_cli
from api.config import ProcessSettings
from bench.common import bench_server, fresh_database, report
from bench.projections import generate, load
from domain.ids import TenantId
from eventstore.pool import create_pool
from handlers.tenants import create_tenant_as_operator

HELPDESK = [sys.executable, "-m", "api.cli.main"]
TRANSPORT_KEY = "bench transport key"


def _settings(runtime_url: str) -> ProcessSettings:
    return ProcessSettings(_env_file=None, database_url=runtime_url)  # type: ignore[call-arg]


def _env(admin_url: str, runtime_url: str) -> dict[str, str]:
    return {**os.environ, "DATABASE_URL": runtime_url, "MIGRATION_DATABASE_URL": admin_url}


def cli_audit_export(source_admin: str, source_runtime: str, tenant_id: TenantId,
                     out: Path) -> float:
    """``helpdesk audit export --tenant T > out`` as its own process; its seconds."""
    t0 = time.perf_counter()
    with out.open("wb") as fh:
        subprocess.run([*HELPDESK, "audit", "export", "--tenant", str(tenant_id)],
                       stdout=fh, stderr=subprocess.DEVNULL,
                       env=_env(source_admin, source_runtime), check=True)
    return time.perf_counter() - t0


def cli_piped(source_admin: str, source_runtime: str, tenant_id: TenantId,
              target_admin: str, target_runtime: str, key: str) -> tuple[float, int]:
    """``helpdesk tenant export ... | helpdesk tenant import ...``: two processes, an OS
    pipe between them, as an operator runs the move; its seconds and events moved."""
    t0 = time.perf_counter()
    exporter = subprocess.Popen(
        [*HELPDESK, "tenant", "export", "--tenant", str(tenant_id), "--transport-key", key],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
        env=_env(source_admin, source_runtime))
    importer = subprocess.run(
        [*HELPDESK, "tenant", "import", "--transport-key", key, "--quiet"],
        stdin=exporter.stdout, capture_output=True, env=_env(target_admin, target_runtime))
    assert exporter.stdout is not None
    exporter.stdout.close()
    if exporter.wait() != 0 or importer.returncode != 0:
        raise RuntimeError(f"piped move failed: {importer.stderr.decode()[-2000:]}")
    return time.perf_counter() - t0, int(orjson.loads(importer.stdout)["events"])


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--events", type=int, default=50_000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    transport = tenant_cli.transport_keyring(TRANSPORT_KEY)
    with bench_server() as server, tempfile.TemporaryDirectory() as tmp:
        async with fresh_database(server, "hd_bench_move_src") as source:
            tenant = await create_tenant_as_operator(source.admin_url, "Move")
            tenant_id = TenantId(tenant.tenant_id)
            pool = await create_pool(source.runtime_url, min_size=1, max_size=2)
            try:
                rows = generate(args.events, seed=7)
                for i in range(0, len(rows), 10_000):
                    await load(pool, tenant_id, rows[i:i + 10_000])
            finally:
                await pool.close()
            src = _settings(source.runtime_url)
            audit_rates: list[float] = []
            export_rates: list[float] = []
            import_rates: list[float] = []
            move_rates: list[float] = []
            written_rates: list[float] = []
            rebuild_rates: list[float] = []
            rebuilt_rates: list[float] = []
            piped_rates: list[float] = []
            cli_audit_rates: list[float] = []
            events = 0
            for n in range(args.rounds):
                path = Path(tmp) / f"audit-{n}.jsonl"
                t0 = time.perf_counter()
                with path.open("wb") as fh:
                    events = await audit.export_tenant(src, tenant_id, fh)
                audit_rates.append(events / (time.perf_counter() - t0))
                path.unlink()

                path = Path(tmp) / f"move-{n}.jsonl"
                t0 = time.perf_counter()
                with path.open("wb") as fh:
                    moved, _ = await tenant_cli.export_tenant(source.admin_url, src,
                                                              tenant_id, fh, transport)
                exported = time.perf_counter() - t0
                async with fresh_database(server, "hd_bench_move_dst") as target:
                    t1 = time.perf_counter()
                    with path.open("rb") as fh:
                        done = await tenant_cli.import_tenant(
                            target.admin_url, _settings(target.runtime_url), fh, transport)
                    imported = time.perf_counter() - t1
                assert moved == events == done.events
                async with fresh_database(server, "hd_bench_move_dst") as target:
                    began: list[float] = []

                    def rebuilding(_name: str, _done: int, _head: int,
                                   began: list[float] = began) -> None:
                        if not began:
                            began.append(time.perf_counter())  # the rebuild's first call

                    t2 = time.perf_counter()
                    with path.open("rb") as fh:
                        await tenant_cli.import_tenant(
                            target.admin_url, _settings(target.runtime_url), fh, transport,
                            rebuilding, rebuild=True)
                    rebuilt = time.perf_counter() - t2
                    rebuilt_rates.append(moved / rebuilt)
                    written_rates.append(moved / (began[0] - t2))
                    rebuild_rates.append(moved / (t2 + rebuilt - began[0]))
                path.unlink()
                path = Path(tmp) / f"audit-cli-{n}.jsonl"
                cli_audit_rates.append(events / cli_audit_export(
                    source.admin_url, source.runtime_url, tenant_id, path))
                path.unlink()
                async with fresh_database(server, "hd_bench_move_dst") as target:
                    seconds, piped_events = await asyncio.to_thread(
                        cli_piped, source.admin_url, source.runtime_url, tenant_id,
                        target.admin_url, target.runtime_url, TRANSPORT_KEY)
                    assert piped_events == moved
                    piped_rates.append(moved / seconds)
                export_rates.append(moved / exported)
                import_rates.append(moved / imported)
                move_rates.append(moved / (exported + imported))
    base = statistics.median(audit_rates)

    cli_base = statistics.median(cli_audit_rates)

    def row(figure: str, rates: list[float], target: str = "",
            against: float = base) -> dict[str, object]:
        value = statistics.median(rates)
        return {"figure": figure, "value": round(value), "baseline": round(against),
                "ratio": round(value / against, 2), "target": target}

    report(f"tenant move, {events} events, {args.rounds} rounds (events/s, medians; "
           "baseline: helpdesk audit export)", [
               row("tenant export + import", move_rates, ">= 0.5x"),
               row("tenant export | import, two processes (baseline: the audit export "
                   "as a process)", piped_rates, ">= 0.5x", cli_base),
               row("tenant export alone", export_rates),
               row("tenant import alone", import_rates),
               row("tenant import --rebuild", rebuilt_rates),
               row("  of it: the transaction (events, keys, rows)", written_rates),
               row("  of it: the analytics rebuild", rebuild_rates),
           ])


if __name__ == "__main__":
    asyncio.run(main())
