"""``helpdesk demo seed``: the demo tenants, and how their keys are shown.

The seed itself is ``handlers.demo.seed`` (through the command handlers, at times
relative to now). Creating the tenants is the operator's, as
``MIGRATION_DATABASE_URL``; everything after runs as ``DATABASE_URL``'s runtime role,
as the API would. The embedded server seeds the demo on its first start and keeps
its keys in ``DATA_DIR/demo.json`` (readable by the owner only), to print them at
every start.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
from typing import Any

import orjson

from api.cli import demo_site
from api.cli.database import using_database
from api.cli.parsing import action, command
from api.config import ProcessSettings
from api.root import ProcessRole, running
from domain.clock import SystemClock
from handlers.demo.plan import DEMO_SITE

Demo = list[dict[str, Any]]
"""The demo as JSON-ready data: per tenant ``tenant_id``, ``slug``, ``name``, ``tickets`` and
``keys`` (``role``, ``name``, ``secret``, ``agent``, ``email``, ``password``)."""


async def seed(settings: ProcessSettings) -> Demo:
    """Seed the demo tenants now; ``settings`` has both database URLs."""
    from handlers.demo.seed import seed_demo

    assert settings.migration_database_url
    async with running(settings, ProcessRole.CLI) as services:
        tenants = await seed_demo(settings.migration_database_url, services.store,
                                  SystemClock().now(), passwords=services.passwords)
        await services.store.notifier.flush()
    return [{"tenant_id": str(t.tenant_id), "slug": t.slug, "name": t.name,
             "tickets": t.tickets,
             "keys": [{"role": k.role, "name": k.name, "secret": k.secret, "agent": k.agent,
                       "email": k.email, "password": k.password} for k in t.keys]}
            for t in tenants]


def describe(demo: Demo, base_url: str | None = None) -> str:
    """The demo's tenants, keys and people's logins as a person reads them at start-up."""
    lines = []
    if base_url:
        lines += [f"  Console:  {base_url}/console/", f"  API docs: {base_url}/docs", ""]
    for tenant in demo:
        # A demo.json written before tenants had slugs has none: the id does as well.
        lines.append(f"  {tenant['name']}  (tenant {tenant.get('slug') or tenant['tenant_id']}, "
                     f"{tenant['tickets']} tickets)")
        if base_url and tenant.get("slug"):
            lines.append(f"    portal:  {base_url}/portal/{tenant['slug']}/   widget: "
                         f"{DEMO_SITE}/{tenant['slug']}/ (`helpdesk demo site`)")
        for key in tenant["keys"]:
            who = key["agent"] or key["name"]
            lines.append(f"    {key['role']:<8} {who:<24} {key['secret']}")
            if key.get("password"):
                lines.append(f"    {'':<8} sign in: {key['email']} / {key['password']}")
        lines.append("")
    lines.append("  Sign in to the console with the tenant, a person's e-mail and password,"
                 "\n  or paste a key into it to act as that person or role.")
    return "\n".join(lines)


def embedded_demo(settings: ProcessSettings, base_url: str) -> str:
    """What the embedded server prints at start-up: the demo tenants and their keys.

    The first start seeds the demo (``helpdesk demo seed``) and keeps the keys in
    ``DATA_DIR/demo.json``, readable by the owner only, to show them at every start. A
    data directory from before the demo has its one tenant in ``demo-tenant.json``:
    that one is shown, and nothing is added to it.
    """
    path = settings.data_dir / "demo.json"
    legacy = settings.data_dir / "demo-tenant.json"
    if not path.exists() and legacy.exists():
        old: dict[str, str] = json.loads(legacy.read_text())
        return (f"  Console:       {base_url}/console/\n"
                f"  API docs:      {base_url}/docs\n"
                f"  Demo tenant:   {old['tenant_id']}\n"
                f"  Admin API key: {old['api_key']}\n"
                "  (`helpdesk demo seed` adds the demo tenants with six weeks of tickets)")
    if not path.exists():
        demo = asyncio.run(seed(settings))
        partial = path.with_suffix(".json.partial")
        partial.write_text(json.dumps(demo))
        os.chmod(partial, 0o600)
        partial.replace(path)
    return describe(json.loads(path.read_text()), base_url)


def cmd_demo_seed(args: argparse.Namespace, settings: ProcessSettings) -> int:
    with using_database(settings, announce=not args.json) as settings:
        if not settings.migration_database_url:
            print("helpdesk: MIGRATION_DATABASE_URL is not set (the owner role's URL): "
                  "only the operator creates tenants", file=sys.stderr)
            return 2
        demo = asyncio.run(seed(settings))
    if args.json:
        sys.stdout.write(orjson.dumps(demo).decode() + "\n")
    else:
        print("Created the demo tenants (the keys and passwords are shown only now):\n")
        print(describe(demo))
    return 0


def add_parser(sub: Any) -> None:
    """``helpdesk demo ...`` on the main parser's subcommands."""
    dsub = command(sub, "demo", "demo data for trying the service and its console")
    p = action(dsub, "seed", cmd_demo_seed,
               help="create two demo tenants (one with six weeks of tickets, one small) through "
                    "the command handlers; print their keys")
    p.add_argument("--json", action="store_true",
                   help="print the tenants and their keys as JSON")
    demo_site.add_parser(dsub)
