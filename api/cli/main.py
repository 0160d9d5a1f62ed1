"""The ``helpdesk`` command line: serve, worker, migrate and operator commands."""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import sys
import uuid
from collections.abc import Callable, Sequence

import orjson

from api.cli.database import owner_url as _owner_url
from api.cli.database import using_database
from api.cli.parsing import action, command
from api.config import ProcessSettings
from domain.ids import TenantId

Command = Callable[[argparse.Namespace, ProcessSettings], int]


def _fail(message: str) -> int:
    print(f"helpdesk: {message}", file=sys.stderr)
    return 2


def cmd_serve(args: argparse.Namespace, settings: ProcessSettings) -> int:
    from api.cli.demo import embedded_demo
    from api.cli.serve import run_server

    if args.host:
        settings = settings.model_copy(update={"host": args.host})
    if args.port:
        settings = settings.model_copy(update={"port": args.port})
    if args.workers is not None:
        settings = settings.model_copy(update={"workers": args.workers})
    embedded = not settings.database_url
    if embedded and "run_scheduler" not in settings.model_fields_set:
        # One process does everything on the embedded server: without a worker
        # running somewhere, SLA breaches and analytics would silently never happen.
        settings = settings.model_copy(update={"run_scheduler": True})
    workers = serve_workers(settings, embedded=embedded)
    with using_database(settings) as settings:
        if embedded:
            logins = embedded_demo(settings, f"http://{settings.host}:{settings.port}")
            print(f"\n  Helpdesk is starting on the embedded Postgres.\n\n{logins}\n",
                  file=sys.stderr, flush=True)
        return run_server(settings, workers=workers)


def serve_workers(settings: ProcessSettings, *, embedded: bool) -> int:
    """How many API processes ``serve`` runs: WORKERS (or --workers) when given; else
    one per core on a server of one's own, and one on the embedded Postgres, which is
    for trying the service out on one machine."""
    if settings.workers is not None:
        return settings.workers
    return 1 if embedded else max(1, len(os.sched_getaffinity(0)))


def cmd_migrate(args: argparse.Namespace, settings: ProcessSettings) -> int:
    from handlers.upgrades import upgrade
    from migrations.runner import MigrationError, migrate

    dsn = settings.migration_database_url
    if not dsn:
        return _fail("MIGRATION_DATABASE_URL is not set (the owner role's URL)")
    user, password = settings.runtime_user()

    def say(message: str) -> None:
        print(f"helpdesk: {message}", file=sys.stderr)

    try:
        applied = asyncio.run(migrate(dsn, runtime_user=user, runtime_password=password,
                                      log=say))
        asyncio.run(upgrade(dsn, log=say))
    except MigrationError as exc:
        return _fail(str(exc))
    except OSError as exc:
        return _fail(f"cannot reach Postgres at MIGRATION_DATABASE_URL: {exc}")
    print(f"helpdesk: {len(applied)} migration(s) applied" if applied
          else "helpdesk: the database is up to date", file=sys.stderr)
    return 0


def cmd_tenants_create(args: argparse.Namespace, settings: ProcessSettings) -> int:
    from handlers.tenants import create_tenant_as_operator

    with _owner_url(settings) as owner_url:
        try:
            t = asyncio.run(create_tenant_as_operator(owner_url, args.name,
                                                      slug=args.slug))
        except ValueError as exc:
            return _fail(str(exc))
    if args.json:
        sys.stdout.write(orjson.dumps({"tenant_id": str(t.tenant_id), "slug": t.slug,
                                       "api_key": t.admin_key.secret}).decode() + "\n")
    else:
        print(f"Created tenant {t.name!r}\n  tenant id:     {t.tenant_id}\n"
              f"  slug:          {t.slug} (people sign in with it)\n"
              f"  admin API key: {t.admin_key.secret}\n"
              "  (the key is shown only now; store it safely)")
    return 0


def cmd_tenants_slug(args: argparse.Namespace, settings: ProcessSettings) -> int:
    from handlers.tenants import set_slug

    with _owner_url(settings) as owner_url:
        try:
            tenant_id = TenantId(uuid.UUID(args.tenant_id))
        except ValueError:
            return _fail(f"not a tenant id: {args.tenant_id!r}")
        try:
            previous = asyncio.run(set_slug(owner_url, tenant_id, args.slug))
        except ValueError as exc:
            return _fail(str(exc))
    print(f"Tenant {tenant_id}: slug {previous!r} is now {args.slug.strip().lower()!r}")
    return 0


def cmd_worker(args: argparse.Namespace, settings: ProcessSettings) -> int:
    from api.cli.worker import check_heartbeat, run_worker

    if args.check:
        healthy, why = check_heartbeat(settings)
        print(f"helpdesk worker: {'ok' if healthy else 'unhealthy'}: {why}",
              file=sys.stdout if healthy else sys.stderr)
        return 0 if healthy else 1

    with using_database(settings) as settings:
        return run_worker(settings)


def cmd_projections_status(args: argparse.Namespace, settings: ProcessSettings) -> int:
    from api.cli.projections import show_status

    with using_database(settings, announce=False) as settings:
        return asyncio.run(show_status(settings))


def cmd_projections_rebuild(args: argparse.Namespace, settings: ProcessSettings) -> int:
    from api.cli.projections import run_rebuild

    with using_database(settings, announce=False) as settings:
        return asyncio.run(run_rebuild(settings, args.name, args.tenant, args.batch_size))


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="helpdesk", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    p = action(sub, "serve", cmd_serve,
               help="run the HTTP API (embedded Postgres without DATABASE_URL)")
    p.add_argument("--host", help="interface to bind (default HOST or 127.0.0.1)")
    p.add_argument("--port", type=int, help="port to bind (default PORT or 8000)")
    p.add_argument("--workers", type=int, metavar="N",
                   help="API processes sharing the port (default WORKERS, else one per core "
                   "with DATABASE_URL and 1 on the embedded Postgres)")

    p = action(sub, "worker", cmd_worker, help="run the scheduler and projectors without the API")
    p.add_argument("--check", action="store_true",
                   help="instead of running, exit 0 if a running worker's heartbeat file "
                   "(WORKER_HEARTBEAT_FILE) is fresh, else 1")

    p = action(sub, "migrate", cmd_migrate,
               help="apply migrations as MIGRATION_DATABASE_URL and create or update the runtime "
                    "role of DATABASE_URL")

    tsub = command(sub, "tenants", "manage tenants and move them between databases (operator)",
                   aliases=["tenant"])
    p = action(tsub, "create", cmd_tenants_create,
               help="create a tenant and print its first admin API key")
    p.add_argument("name", help="the tenant's display name")
    p.add_argument("--slug", help="what people type to sign in (default: made from the "
                   "name); lower-case letters, digits and hyphens")
    p.add_argument("--json", action="store_true",
                   help="print {tenant_id, slug, api_key} as JSON")
    p = action(tsub, "slug", cmd_tenants_slug,
               help="give a tenant another slug (the old one stops working)")
    p.add_argument("tenant_id", help="the tenant's id")
    p.add_argument("slug", help="the new slug")
    from api.cli import tenant as tenant_cli

    tenant_cli.add_actions(tsub)

    psub = command(sub, "projections", "inspect and rebuild async read models")
    p = action(psub, "status", cmd_projections_status, help="lag per projection and tenant")
    p = action(psub, "rebuild", cmd_projections_rebuild,
               help="rebuild a projection from seq 0 while the API runs")
    p.add_argument("name", help="the projection's name (e.g. analytics)")
    p.add_argument("--tenant", help="only this tenant id (default: every tenant)")
    p.add_argument("--batch-size", type=int, help="events per transaction (default 2000)")

    from api.cli import audit as audit_cli
    from api.cli import demo as demo_cli
    from api.cli import imports as imports_cli
    from api.cli import keys as keys_cli
    from api.cli import search as search_cli

    audit_cli.add_parser(sub)
    demo_cli.add_parser(sub)
    imports_cli.add_parser(sub)
    keys_cli.add_parser(sub)
    search_cli.add_parser(sub)
    return parser


def _terminated(signum: int, _frame: object) -> None:
    # SIGTERM's default action ends the process on the spot; as an exception it
    # unwinds, so what the command holds is released (the embedded Postgres it may
    # be the last user of, its pool). ``serve`` and ``worker`` handle SIGTERM
    # themselves while they run.
    raise SystemExit(128 + signum)


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    settings = ProcessSettings()
    func: Command = args.func
    signal.signal(signal.SIGTERM, _terminated)
    try:
        return func(args, settings)
    except KeyboardInterrupt:
        return 130
    except Exception as exc:
        from api.root import UnsafeRole
        from eventstore.errors import StoreUnavailable
        from eventstore.keys import WrongDataKey

        if isinstance(exc, (UnsafeRole, StoreUnavailable, WrongDataKey)):
            return _fail(str(exc))
        raise


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())


