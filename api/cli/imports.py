"""``helpdesk import zendesk --tenant T DIRECTORY [--dry-run] [--json]``: bring a Zendesk
export into a tenant as history (handlers/zendesk_import.py, docs/import.md)."""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path
from uuid import UUID

import orjson
from tqdm import tqdm

from api.cli.database import using_database
from api.cli.parsing import Subcommands, action, command
from api.config import ProcessSettings
from api.root import ProcessRole, running
from domain.ids import TenantId
from handlers.zendesk_import import import_zendesk
from handlers.zendesk_records import ImportReport


class _Bars:
    """One progress bar per kind of record, on stderr."""

    def __init__(self) -> None:
        self.bars: dict[str, tqdm[None]] = {}

    def __call__(self, kind: str, done: int, total: int) -> None:
        bar = self.bars.get(kind)
        if bar is None:
            bar = self.bars[kind] = tqdm(total=total, desc=f"{kind}s", unit=kind,
                                         file=sys.stderr, leave=True)
        bar.update(done - bar.n)

    def close(self) -> None:
        for bar in self.bars.values():
            bar.close()


async def run_import(settings: ProcessSettings, tenant: TenantId, directory: Path, *,
                     dry_run: bool, quiet: bool) -> ImportReport:
    async with running(settings, ProcessRole.CLI) as services:
        bars = None if quiet else _Bars()
        try:
            return await import_zendesk(services.store, services.files, tenant, directory,
                                        dry_run=dry_run, progress=bars)
        finally:
            if bars is not None:
                bars.close()


def print_report(report: ImportReport, *, as_json: bool) -> None:
    """Everything skipped, with the reason, then the counts."""
    if as_json:
        doc = report.summary() | {"skipped_records": [
            {"kind": s.kind, "id": s.source_id, "reason": s.reason} for s in report.skipped]}
        sys.stdout.write(orjson.dumps(doc).decode() + "\n")
        return
    for s in report.skipped:
        print(f"skipped {s.kind} {s.source_id}: {s.reason}")
    verb = "would create" if report.dry_run else "created"
    summary = report.summary()
    for label, counts in ((verb, summary["created"]), ("already imported", summary["existing"]),
                          ("skipped", summary["skipped"])):
        text = ", ".join(f"{n} {kind}" for kind, n in counts.items()) or "nothing"
        print(f"{label}: {text}")


def cmd_zendesk(args: argparse.Namespace, settings: ProcessSettings) -> int:
    directory = Path(args.directory)
    if not directory.is_dir():
        print(f"helpdesk: {directory} is not a directory", file=sys.stderr)
        return 2
    with using_database(settings, announce=False) as resolved:
        report = asyncio.run(run_import(resolved, TenantId(args.tenant), directory,
                                        dry_run=args.dry_run, quiet=args.json))
    print_report(report, as_json=args.json)
    return 0


def add_parser(sub: Subcommands) -> None:
    """Register ``helpdesk import zendesk``."""
    isub = command(sub, "import", "bring another helpdesk's history into a tenant",
                   metavar="SOURCE")
    p = action(isub, "zendesk", cmd_zendesk,
               help="import a Zendesk export (JSON files in a directory, never the network); safe "
                    "to run again: what was imported is skipped")
    p.add_argument("directory", help="the export's directory (docs/import.md)")
    p.add_argument("--tenant", type=UUID, required=True, help="tenant id")
    p.add_argument("--dry-run", action="store_true",
                   help="write nothing; report what would be created and skipped")
    p.add_argument("--json", action="store_true",
                   help="print the report as JSON (and no progress bars)")
