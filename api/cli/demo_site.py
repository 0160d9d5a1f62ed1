"""``helpdesk demo site``: a web site of another origin that embeds the demo tenants'
widgets, as a tenant's own shop or blog would.

It serves, on ``http://127.0.0.1:8001`` by default (the origin the demo lists in each
tenant's ``widget_origins``: handlers/demo/seed.py ``DEMO_SITE``), an index of the
demo tenants and, for each, ``/<slug>/``: a small page with the one line a tenant
pastes, ``<script src=".../widget/v1.js" data-tenant="...">``. The tenants come from
the demo's keys file (``DATA_DIR/demo.json``, written by the embedded server's first
start) or the JSON of ``helpdesk demo seed --json`` (``--demo FILE``).
"""

from __future__ import annotations

import argparse
import contextlib
import html
import http.server
import json
import sys
from pathlib import Path
from typing import Any

from api.cli.parsing import action
from api.config import ProcessSettings

PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{title}</title></head>
<body>
<h1>{title}</h1>
{body}
</body></html>
"""


def pages(demo: list[dict[str, Any]], api: str) -> dict[str, bytes]:
    """The site's pages by path: the index and one page per demo tenant."""
    items = "".join(f'<li><a href="/{html.escape(t["slug"])}/">{html.escape(t["name"])}</a></li>'
                    for t in demo)
    found = {"/": PAGE.format(title="A site of another origin", body=(
        "<p>Each page embeds a demo tenant's help widget from "
        f"<code>{html.escape(api)}</code>: the launcher is at the bottom right.</p>"
        f"<ul>{items}</ul>")).encode()}
    for t in demo:
        script = (f'<script src="{html.escape(api)}/widget/v1.js" '
                  f'data-tenant="{html.escape(t["tenant_id"])}" async></script>')
        found[f"/{t['slug']}/"] = PAGE.format(title=html.escape(t["name"]), body=(
            f"<p>The tenant's site with its widget. The tenant's portal is at "
            f'<a href="{html.escape(api)}/portal/{html.escape(t["slug"])}/">'
            f"{html.escape(api)}/portal/{html.escape(t['slug'])}/</a>.</p>"
            f"<pre>{html.escape(script)}</pre>{script}")).encode()
    return found


def cmd_demo_site(args: argparse.Namespace, settings: ProcessSettings) -> int:
    source = Path(args.demo) if args.demo else settings.data_dir / "demo.json"
    if not source.exists():
        print(f"helpdesk: {source} does not exist: start the embedded server once "
              "(`helpdesk serve` with no DATABASE_URL), or pass --demo with the JSON of "
              "`helpdesk demo seed --json`", file=sys.stderr)
        return 2
    site = pages(json.loads(source.read_text()), args.api.rstrip("/"))

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # the standard library's name
            body = site.get(self.path.split("?")[0])
            self.send_response(200 if body else 404)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.end_headers()
            self.wfile.write(body or b"not found")

    with http.server.ThreadingHTTPServer((args.host, args.port), Handler) as server:
        print(f"The demo site: http://{args.host}:{args.port}/ (Ctrl+C stops it)")
        with contextlib.suppress(KeyboardInterrupt):
            server.serve_forever()
    return 0


def add_parser(demo_sub: Any) -> None:
    """``helpdesk demo site`` on the demo command's actions."""
    p = action(demo_sub, "site", cmd_demo_site,
               help="serve a page of another origin embedding each demo tenant's widget "
                    "(http://127.0.0.1:8001/)")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=8001,
                   help="8001 is the origin the demo tenants list for their widgets")
    p.add_argument("--api", default="http://127.0.0.1:8000", help="the helpdesk's address")
    p.add_argument("--demo", help="the demo's JSON (default: DATA_DIR/demo.json)")


__all__ = ["add_parser", "cmd_demo_site", "pages"]
