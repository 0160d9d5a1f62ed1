"""``helpdesk audit``: verify a tenant's hash chain, export it, verify an export offline.

The database commands connect as DATABASE_URL's runtime role under the tenant's own
context (row-level security applies, nothing can be written: every transaction is
read-only), never as the owner: an audit needs no more than an auditor key would see.
With READ_DATABASE_URL they read the replica while it is fit (as the same runtime
role), else the primary, and say which on stderr (verify: also ``read_from``).
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from typing import IO
from uuid import UUID

import orjson

from api.cli.database import using_database
from api.cli.parsing import Subcommands, action, command
from api.config import ProcessSettings
from api.root import ProcessRole, running
from domain.ids import TenantId
from eventstore.export import ExportFormatError, event_line, header_line, verify_lines
from eventstore.replica import Source
from eventstore.store import EventStore
from handlers import attachments

VERIFY_CHUNK = 10_000
EXPORT_BATCH = 1_000


def _fail(message: str) -> int:
    print(f"helpdesk: {message}", file=sys.stderr)
    return 2


async def verify_tenant(settings: ProcessSettings, tenant_id: TenantId, *,
                        chunk: int = VERIFY_CHUNK, progress: bool = True) -> dict[str, object]:
    """Verify the whole chain of one tenant, ``chunk`` seqs per transaction."""
    from tqdm import tqdm

    async def verify(store: EventStore) -> dict[str, object]:
        async with store.unit_of_work(tenant_id, readonly=True) as s:
            head_seq, _ = await s.head()
        checked, first_bad = 0, None
        with tqdm(total=head_seq, unit="ev", file=sys.stderr, disable=not progress,
                  desc="verifying") as bar:
            start = 1
            while start <= head_seq:
                end = min(start + chunk - 1, head_seq)
                async with store.unit_of_work(tenant_id, readonly=True) as s:
                    report = await s.verify_chain(start, end)
                checked += report.checked
                bar.update(end - start + 1)
                if not report.ok:
                    first_bad = report.first_bad_seq
                    break
                start = end + 1
        return {"ok": first_bad is None, "checked": checked, "head_seq": head_seq,
                "first_bad_seq": first_bad}

    async with running(settings, ProcessRole.CLI) as services:
        # A replica that fails part-way is left for the primary, which verifies anew.
        report, source = await services.reads.run(verify)
    _announce(source)
    return {**report, "read_from": source.name}


async def verify_files(settings: ProcessSettings, tenant_id: TenantId) -> dict[str, object]:
    """Check every stored file of the tenant against its recorded hash: the hash its
    blob row keeps, and the one the event that attached it carries (the chain covers
    that one). Reads the primary, where the files are."""
    async with running(settings, ProcessRole.CLI) as services:
        recorded: dict[UUID, str] = {}
        after = 0
        while True:
            async with services.store.unit_of_work(tenant_id, readonly=True) as s:
                head_seq, _ = await s.head()
                events = await s.read_range(after, head_seq, EXPORT_BATCH)
            if not events:
                break
            for event in events:
                for ref in event.data.get("attachments", ()):
                    recorded[UUID(ref["id"])] = ref["sha256"]
            after = events[-1].seq
        check = await attachments.verify_files(services.store, services.files, tenant_id,
                                               recorded)
    return {"checked": check.checked, "erased": check.erased, "bad": check.bad}


def _announce(source: Source) -> None:
    behind = f", {source.lag_seconds:.3f} s behind the primary" if source.replica else ""
    print(f"helpdesk: read from the {source.name}{behind}", file=sys.stderr)


async def write_events(store: EventStore, tenant_id: TenantId, out: IO[bytes], *,
                       from_seq: int = 1, to_seq: int | None = None) -> tuple[int, int, bytes]:
    """Write the audit export of the tenant's events ``from_seq..to_seq`` (header and
    event lines) from ``store``; returns (events written, the head when the export
    began, its hash). ``helpdesk tenant export`` carries its events by this too."""
    written = 0
    async with store.unit_of_work(tenant_id, readonly=True) as s:
        head_seq, head_hash = await s.head()
        end = head_seq if to_seq is None else min(to_seq, head_seq)
        prev = await s.hash_at(from_seq - 1) if from_seq > 1 else bytes(32)
    out.write(header_line(tenant_id, from_seq, end, prev,
                          head_seq, head_hash if end == head_seq else None))
    after = from_seq - 1
    while after < end:
        async with store.unit_of_work(tenant_id, readonly=True) as s:
            events = await s.read_range(after, end, EXPORT_BATCH)
        if not events:
            break
        for event in events:
            out.write(event_line(event))
        written += len(events)
        after = events[-1].seq
    return written, head_seq, head_hash


async def export_tenant(settings: ProcessSettings, tenant_id: TenantId, out: IO[bytes], *,
                        from_seq: int = 1, to_seq: int | None = None) -> int:
    """Stream the tenant's events ``from_seq..to_seq`` as export lines; returns the count."""
    async with running(settings, ProcessRole.CLI) as services:
        # Lines already written cannot be taken back: the source is chosen once, and
        # a replica failing part-way fails the export (run it again).
        store, source = services.reads.choose()
        _announce(source)
        written, _, _ = await write_events(store, tenant_id, out, from_seq=from_seq,
                                           to_seq=to_seq)
    out.flush()
    return written


def cmd_verify(args: argparse.Namespace, settings: ProcessSettings) -> int:
    if (args.file is None) == (args.tenant is None):
        return _fail("give exactly one of --tenant and --file")
    if args.files and args.tenant is None:
        return _fail("--files checks a tenant's stored files: give --tenant")
    if args.file is not None:
        try:
            with open(args.file, "rb") as fh:
                report = verify_lines(fh).as_dict()
        except OSError as exc:
            return _fail(f"cannot read {args.file}: {exc}")
        except ExportFormatError as exc:
            return _fail(f"{args.file}: {exc}")
    else:
        with using_database(settings, announce=False) as resolved:
            report = asyncio.run(verify_tenant(resolved, TenantId(args.tenant),
                                               progress=not args.quiet))
            if args.files:
                files = asyncio.run(verify_files(resolved, TenantId(args.tenant)))
                report = {**report, "files": files,
                          "ok": bool(report["ok"]) and not files["bad"]}
    sys.stdout.write(orjson.dumps(report).decode() + "\n")
    return 0 if report["ok"] else 1


def cmd_export(args: argparse.Namespace, settings: ProcessSettings) -> int:
    if args.from_seq < 1 or (args.to_seq is not None and args.to_seq < args.from_seq):
        return _fail("--from-seq must be at least 1 and --to-seq not below it")
    with using_database(settings, announce=False) as resolved:
        n = asyncio.run(export_tenant(resolved, TenantId(args.tenant), sys.stdout.buffer,
                                      from_seq=args.from_seq, to_seq=args.to_seq))
    print(f"helpdesk: exported {n} event(s)", file=sys.stderr)
    return 0


def add_parser(sub: Subcommands) -> None:
    """Register ``helpdesk audit verify|export``."""
    asub = command(sub, "audit", "verify and export a tenant's audit trail")
    p = action(asub, "verify", cmd_verify,
               help="recompute the hash chain (of a tenant, or of an export file with no "
                    "database); exit 1 if it was altered")
    p.add_argument("--tenant", type=UUID, help="tenant id (uses DATABASE_URL)")
    p.add_argument("--file", help="an export made by `helpdesk audit export`")
    p.add_argument("--files", action="store_true",
                   help="also read every stored file and check it against its recorded "
                        "sha256 (`files` in the report; exit 1 if one does not match)")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p = action(asub, "export", cmd_export,
               help="write the tenant's events as JSON lines to stdout")
    p.add_argument("--tenant", type=UUID, required=True, help="tenant id")
    p.add_argument("--from-seq", type=int, default=1)
    p.add_argument("--to-seq", type=int, default=None)
