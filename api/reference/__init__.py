"""The API reference: Swagger UI over the served OpenAPI document, at ``/docs/``.

Every file is in the package, nothing is fetched from elsewhere at run time: our page
and its start-up script (``static/``), and Swagger UI's script and style from the
``fastapi-offline`` package on PyPI (pinned in pyproject.toml and constraints.txt;
the package is MIT-licensed, the Swagger UI files it ships are Apache-2.0). The pages
are served with the console's strict Content-Security-Policy (``api.console.CSP``:
this origin only, no inline script or style, no framing) but for ``data:`` images
(Swagger UI's icons), and its validator badge (which would call out to a public
validator) is off. ReDoc is not served: its standalone script injects inline styles,
which that policy forbids.

A static mount, not an API route, like the console: in neither the OpenAPI document
nor the authorization table.
"""

from __future__ import annotations

from pathlib import Path

from fastapi import FastAPI

from api.console import PageFiles, page_policy

STATIC = Path(__file__).with_name("static")
PREFIX = "/docs"
SWAGGER_UI = ("fastapi_offline", "static")
REFERENCE_CSP = page_policy("data:")
"""The console's policy, but for images: Swagger UI's style draws its icons as
``data:`` SVG images (an image runs no script), and it shows no thumbnails."""
"""Where Swagger UI's ``swagger-ui-bundle.js`` and ``swagger-ui.css`` are installed."""


def mount(app: FastAPI) -> None:
    """Serve the reference at ``/docs/`` (``/docs`` redirects there)."""
    app.mount(PREFIX, PageFiles(STATIC, prefix=PREFIX, packages=[SWAGGER_UI],
                                   csp=REFERENCE_CSP), name="reference")


__all__ = ["PREFIX", "REFERENCE_CSP", "STATIC", "mount"]
