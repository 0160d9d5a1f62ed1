"""``helpdesk tenant export|import|read-only``: move a tenant to another database.

Run as the owner role (MIGRATION_DATABASE_URL) and only from here. The export writes
the tenant's events with the same reader as ``helpdesk audit export`` (its lines are
in the file as that command writes them, personal fields sealed), then the state
handlers/tenant_move.py describes, its rows sealed by a key the transport key wraps
(handlers/export_seal.py); the import writes all of it in one transaction (and, with ``--rebuild``,
rebuilds the async read models from the events after it). The cut-over is in
docs/operations.md ("Moving a tenant").
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Callable
from typing import IO
from uuid import UUID

import asyncpg
import orjson

from api.cli.audit import write_events
from api.cli.database import owner_url
from api.cli.parsing import Subcommands, action
from api.config import ProcessSettings
from api.root import load_keyring
from domain.ids import TenantId
from eventstore.blobs import DirectoryStorage
from eventstore.keys import Keyring
from eventstore.pool import create_pool
from eventstore.store import EventStore
from handlers import tenant_move
from handlers.export_seal import StateSeal
from handlers.tenant_move import MoveRefused

Progress = Callable[[str, int, int], None]


def _fail(message: str) -> int:
    print(f"helpdesk: {message}", file=sys.stderr)
    return 2


async def _as_owner(conn: asyncpg.Connection) -> None:
    # For the connection's whole life: the pool keeps sessions as they are
    # (eventstore/pool.py), so a login that is a superuser still works under the
    # owner role's row-level security.
    await conn.execute("SET ROLE helpdesk_owner")


async def _owner_pool(url: str) -> asyncpg.Pool:
    return await create_pool(url, min_size=1, max_size=3, command_timeout=None,
                             init=_as_owner)


def _directory(settings: ProcessSettings) -> DirectoryStorage | None:
    """The file directory of this database's processes (FILE_STORAGE_DIR), if any."""
    return (None if settings.file_storage_dir is None
            else DirectoryStorage(settings.file_storage_dir))


def transport_keyring(secret: str) -> Keyring:
    """The keyring of a transport key given on the command line."""
    return Keyring(secret.encode("utf-8"))


async def export_tenant(url: str, settings: ProcessSettings, tenant_id: TenantId,
                        out: IO[bytes], transport: Keyring) -> tuple[int, int]:
    """Write the tenant's export to ``out``; returns (events, state lines)."""
    pool = await _owner_pool(url)
    seal = StateSeal.new(tenant_id)
    try:
        async with pool.acquire() as conn:
            keyring = await load_keyring(settings, conn)
            async with conn.transaction(readonly=True):
                await tenant_move.arm_owner(conn, tenant_id)
                head = await tenant_move.header(conn, tenant_id, transport, seal)
        if head["paused_retry_after"] is None:
            print("helpdesk: the tenant's writes are not paused (`helpdesk tenant "
                  "read-only --on`); the export fails if an event is written meanwhile",
                  file=sys.stderr)
        out.write(orjson.dumps(head) + b"\n")
        events, head_seq, head_hash = await write_events(
            EventStore(pool, keyring=keyring), tenant_id, out)
        async with pool.acquire() as conn, conn.transaction(readonly=True,
                                                            isolation="repeatable_read"):
            await tenant_move.arm_owner(conn, tenant_id)
            lines = await tenant_move.write_state(conn, tenant_id, keyring, transport, seal,
                                                  out, _directory(settings))
            now, _ = await tenant_move.head_of(conn, tenant_id)
        if now != head_seq or head_seq != head["head_seq"]:
            raise MoveRefused("written_meanwhile", "the tenant was written during "
                                      "the export: pause its writes and export again")
        out.write(tenant_move.end_line(head_seq, head_hash, lines))
        out.flush()
    finally:
        await pool.close()
    return events, lines


async def import_tenant(url: str, settings: ProcessSettings, source: IO[bytes],
                        transport: Keyring, progress: Progress | None = None, *,
                        rebuild: bool = False) -> tenant_move.Imported:
    """Import an export from ``source``; with ``rebuild``, rebuild the async read models
    from the events after it (``progress`` follows the rebuild). Without, they are the
    rows and checkpoints the export carried (handlers/tenant_move.py says why)."""
    pool = await _owner_pool(url)
    try:
        async with pool.acquire() as conn:
            keyring = await load_keyring(settings, conn)
            async with conn.transaction():
                imported = await tenant_move.import_tenant(conn, source, keyring, transport,
                                                           _directory(settings))
        if rebuild:
            await tenant_move.rebuild_projections(pool, imported.tenant_id, progress)
    finally:
        await pool.close()
    return imported


async def set_read_only(url: str, tenant_id: TenantId, retry_after: int | None) -> None:
    """Pause the tenant's writes (or let them go on again)."""
    pool = await _owner_pool(url)
    try:
        async with pool.acquire() as conn, conn.transaction():
            await tenant_move.set_read_only(conn, tenant_id, retry_after)
    finally:
        await pool.close()


def cmd_export(args: argparse.Namespace, settings: ProcessSettings) -> int:
    with owner_url(settings) as url:
        try:
            if args.out:
                with open(args.out, "wb") as fh:
                    events, lines = asyncio.run(export_tenant(
                        url, settings, TenantId(args.tenant), fh,
                        transport_keyring(args.transport_key)))
            else:
                events, lines = asyncio.run(export_tenant(
                    url, settings, TenantId(args.tenant), sys.stdout.buffer,
                    transport_keyring(args.transport_key)))
        except MoveRefused as exc:
            return _fail(exc.message)
        except OSError as exc:
            return _fail(f"cannot write {args.out}: {exc}")
    print(f"helpdesk: exported {events} event(s) and {lines} line(s) of state",
          file=sys.stderr)
    return 0


def cmd_import(args: argparse.Namespace, settings: ProcessSettings) -> int:
    from tqdm import tqdm

    bars: dict[str, tqdm] = {}

    def progress(name: str, done: int, head: int) -> None:
        bar = bars.setdefault(name, tqdm(desc=f"rebuilding {name}", unit="ev",
                                         file=sys.stderr, disable=args.quiet))
        bar.total, bar.n = head, done
        bar.refresh()

    with owner_url(settings) as url:
        try:
            if args.file:
                with open(args.file, "rb") as fh:
                    done = asyncio.run(import_tenant(url, settings, fh,
                                                     transport_keyring(args.transport_key),
                                                     progress, rebuild=args.rebuild))
            else:
                done = asyncio.run(import_tenant(url, settings, sys.stdin.buffer,
                                                 transport_keyring(args.transport_key),
                                                 progress, rebuild=args.rebuild))
        except MoveRefused as exc:
            return _fail(exc.message)
        except OSError as exc:
            return _fail(f"cannot read {args.file}: {exc}")
        finally:
            for bar in bars.values():
                bar.close()
    sys.stdout.write(orjson.dumps({
        "tenant_id": str(done.tenant_id), "events": done.events, "head_seq": done.head_seq,
        "data_keys": done.data_keys, "rows": done.rows}).decode() + "\n")
    return 0


def cmd_read_only(args: argparse.Namespace, settings: ProcessSettings) -> int:
    if args.on == args.off:
        return _fail("give exactly one of --on and --off")
    with owner_url(settings) as url:
        try:
            asyncio.run(set_read_only(url, TenantId(args.tenant),
                                      args.retry_after if args.on else None))
        except MoveRefused as exc:
            return _fail(exc.message)
    state = (f"read-only (writes answer 503, Retry-After: {args.retry_after})" if args.on
             else "writable")
    print(f"helpdesk: tenant {args.tenant} is {state}", file=sys.stderr)
    return 0


def add_actions(tsub: Subcommands) -> None:
    """Register ``helpdesk tenant export|import|read-only``."""
    p = action(tsub, "export", cmd_export,
               help="write the tenant's events, keys, files and rows to move it to another "
                    "database (owner role)")
    p.add_argument("--tenant", type=UUID, required=True, help="tenant id")
    p.add_argument("--transport-key", required=True,
                   help="the secret that wraps the tenant's data keys in the file; the "
                        "import needs the same")
    p.add_argument("--out", help="the file to write (default: stdout)")
    p = action(tsub, "import", cmd_import,
               help="bring in a `helpdesk tenant export` (owner role; same schema version)")
    p.add_argument("--transport-key", required=True, help="the key the export was made with")
    p.add_argument("--file", help="the export to read (default: stdin)")
    p.add_argument("--rebuild", action="store_true",
                   help="rebuild the async read models (analytics) from the events after "
                        "the import, rather than keep the rows the export carried")
    p.add_argument("--quiet", action="store_true", help="no progress bars")
    p = action(tsub, "read-only", cmd_read_only,
               help="pause a tenant's writes (503 with Retry-After) or let them go on; reads are "
                    "served throughout")
    p.add_argument("--tenant", type=UUID, required=True, help="tenant id")
    p.add_argument("--on", action="store_true", help="pause writes")
    p.add_argument("--off", action="store_true", help="let writes go on")
    p.add_argument("--retry-after", type=int, default=60, metavar="SECONDS",
                   help="what refused writes are told to wait (default 60)")
