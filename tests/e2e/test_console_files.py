"""The console's files: served at /console/ with a strict Content-Security-Policy,
shipped in the package, referring to nothing outside this origin, and kept out of the
API's routes (the authorization table and the OpenAPI document)."""

from __future__ import annotations

import fnmatch
import re
import tomllib
from pathlib import Path

from api.console import CSP, STATIC

ROOT = Path(__file__).resolve().parents[2]
FILES = sorted(p for p in STATIC.rglob("*") if p.is_file())
SVG_NS = "http://www.w3.org/2000/svg"  # a name, never fetched


async def test_the_console_is_served_with_a_self_only_policy(http):
    r = await http.get("/console", follow_redirects=False)
    assert r.status_code in (307, 308) and r.headers["location"].endswith("/console/")
    page = await http.get("/console/")
    assert page.status_code == 200
    assert page.headers["content-type"].startswith("text/html")
    assert '<script type="module" src="js/main.js">' in page.text
    csp = page.headers["content-security-policy"]
    assert csp == CSP
    directives = dict(d.strip().split(" ", 1) for d in csp.split(";"))
    assert directives["default-src"] == "'none'"
    for name in ("script-src", "style-src", "connect-src"):
        assert directives[name] == "'self'", name
    # Images: this origin's, and blob: URLs (the thumbnails of attached files, fetched
    # with the session's credential); never another origin, never data: URLs.
    assert directives["img-src"] == "'self' blob:"
    assert directives["frame-ancestors"] == "'none'"
    assert page.headers["x-content-type-options"] == "nosniff"
    assert page.headers["referrer-policy"] == "no-referrer"


async def test_every_file_is_served_with_its_type_and_the_policy(http):
    types = {".html": "text/html", ".js": "text/javascript", ".css": "text/css",
             ".svg": "image/svg+xml"}
    for path in FILES:
        rel = path.relative_to(STATIC).as_posix()
        r = await http.get(f"/console/{rel}")
        assert r.status_code == 200, rel
        assert r.headers["content-type"].startswith(types[path.suffix]), rel
        assert r.headers["content-security-policy"] == CSP, rel
        assert r.content == path.read_bytes()
    assert (await http.get("/console/js/nothing.js")).status_code == 404


async def test_the_console_is_no_api_route(http):
    spec = (await http.get("/openapi.json")).json()
    assert not any(path.startswith("/console") for path in spec["paths"])


def test_nothing_refers_outside_the_origin():
    """No CDN, no web font, no remote script: every reference is relative or to /v1."""
    url = re.compile(r"""(?:https?:)?//[A-Za-z0-9][^\s'"`)]*""")
    for path in FILES:
        text = path.read_text()
        found = [u for u in url.findall(text) if u != SVG_NS]
        assert not found, (path.name, found)
        assert "@import" not in text and "fonts.g" not in text, path.name
    index = (STATIC / "index.html").read_text()
    assert "<style" not in index and "style=" not in index  # the policy forbids them
    assert re.search(r"<script(?![^>]*\bsrc=)", index) is None  # no inline script


def test_the_package_ships_every_file():
    """pyproject's package-data globs cover each file (no build step at install)."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    globs = config["tool"]["setuptools"]["package-data"]["api.console"]
    package = STATIC.parent
    for path in FILES:
        rel = path.relative_to(package).as_posix()
        assert any(fnmatch.fnmatch(rel, g) for g in globs), rel


def test_javascript_modules_import_only_files_that_exist():
    imports = re.compile(r"""^import .* from '(\.[^']+)';$""", re.M)
    for path in STATIC.rglob("*.js"):
        for target in imports.findall(path.read_text()):
            assert (path.parent / target).resolve().is_file(), (path.name, target)
