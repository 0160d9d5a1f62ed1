"""The pages customers see: the help portal at ``/portal/<tenant>/`` and the widget
script at ``/widget/v1.js`` (docs/portal.md, docs/widget.md).

Served like the console, by the one ``api.console.PageFiles``: plain files in the
package, no build step, the same security headers and strict Content-Security-Policy.
The portal's files are the same for every tenant (the first segment of the path names
the tenant and is no part of the file's path); the portal imports the console's
element builder and API client (``/console/js/dom.js``, ``/console/js/api.js``) rather
than carrying copies. Static mounts, not API routes: in neither the OpenAPI document
nor the authorization table.
"""

from __future__ import annotations

from pathlib import Path

from fastapi import FastAPI

from api.console import CSP, PageFiles

PORTAL = Path(__file__).with_name("portal")
WIDGET = Path(__file__).with_name("widget")
PORTAL_PREFIX = "/portal"
WIDGET_PREFIX = "/widget"
PORTAL_CSP = CSP
"""The console's: this origin only, plus ``blob:`` images (the thumbnails of a
message's files, fetched with the portal token)."""


def mount(app: FastAPI) -> None:
    """Serve the portal at ``/portal/<tenant>/`` and the widget's script at
    ``/widget/v1.js``. The script's answer carries the same headers (its policy
    governs nothing in the page that loads it; ``nosniff`` makes browsers run it only
    as the JavaScript it is)."""
    app.mount(PORTAL_PREFIX, PageFiles(PORTAL, prefix=PORTAL_PREFIX, csp=PORTAL_CSP,
                                       tenant_segment=True), name="portal")
    app.mount(WIDGET_PREFIX, PageFiles(WIDGET, prefix=WIDGET_PREFIX), name="widget")


__all__ = ["PORTAL", "PORTAL_CSP", "WIDGET", "mount"]
