"""The customer pages' files and the routes they stand on: the portal served at
/portal/<tenant>/ with the console's strict policy, the widget's script small enough,
nothing referring outside the origin, the package shipping every file, each language
with every word; the tenant's brand colour validated and answered, publicly for the
portal and to listed origins only for the widget."""

from __future__ import annotations

import fnmatch
import gzip
import re
import tomllib
from pathlib import Path

from api.pages import PORTAL, PORTAL_CSP, WIDGET
from tests.e2e.conftest import auth

ROOT = Path(__file__).resolve().parents[2]
PORTAL_FILES = sorted(p for p in PORTAL.rglob("*") if p.is_file())
SCRIPT = WIDGET / "v1.js"
WIDGET_BUDGET = 30 * 1024
ORIGIN = "https://tea.example.com"


async def test_the_pages_are_served_under_the_policy_the_portal_for_every_tenant(http) -> None:
    r = await http.get("/portal/acme", follow_redirects=False)
    assert r.status_code in (307, 308) and r.headers["location"].endswith("/portal/acme/")
    for tenant in ("acme", "3f2b6a7e-0c1d-4e5f-8a9b-0c1d2e3f4a5b"):
        page = await http.get(f"/portal/{tenant}/")
        assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
        assert page.headers["content-security-policy"] == PORTAL_CSP
        assert page.headers["x-content-type-options"] == "nosniff"
    for path in PORTAL_FILES:
        rel = path.relative_to(PORTAL).as_posix()
        r = await http.get(f"/portal/acme/{rel}")
        assert r.status_code == 200, rel
        assert r.content == path.read_bytes(), rel
        assert r.headers["content-security-policy"] == PORTAL_CSP, rel
    # A segment that is no slug or id, and no tenant at all, are not pages.
    for wrong in ("/portal/", "/portal/a%20b/", "/portal/_x/js/main.js"):
        assert (await http.get(wrong)).status_code == 404, wrong
    # The modules it shares with the console are the console's own files.
    assert (await http.get("/console/js/dom.js")).status_code == 200
    script = await http.get("/widget/v1.js")
    assert script.status_code == 200 and script.content == SCRIPT.read_bytes()
    assert script.headers["content-type"].startswith("text/javascript")


def test_the_widget_script_stays_small() -> None:
    size = len(gzip.compress(SCRIPT.read_bytes(), 9))
    assert size < WIDGET_BUDGET, f"the widget is {size} bytes gzipped"


def test_nothing_refers_outside_the_origin() -> None:
    url = re.compile(r"""(?:https?:)?//[A-Za-z0-9][^\s'"`)]*""")
    for path in [*PORTAL_FILES, SCRIPT]:
        text = path.read_text()
        assert not url.findall(text), path.name
        assert "@import" not in text, path.name
    index = (PORTAL / "index.html").read_text()
    assert "<style" not in index and "style=" not in index
    assert re.search(r"<script(?![^>]*\bsrc=)", index) is None


def test_the_package_ships_every_file() -> None:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    globs = config["tool"]["setuptools"]["package-data"]["api.pages"]
    for path in [*PORTAL_FILES, SCRIPT]:
        rel = path.relative_to(PORTAL.parent).as_posix()
        assert any(fnmatch.fnmatch(rel, g) for g in globs), rel


def _tables(text: str, opening: str) -> dict[str, set[str]]:
    """The keys of each language's table of words (``en: {...}``) in a script."""
    body = text[text.index(opening):]
    tables: dict[str, set[str]] = {}
    for lang, block in re.findall(r"\n\s{2,4}(\w\w): \{(.*?)\n\s{2,4}\},", body, re.S):
        # A key opens a line or follows the previous value's closing quote.
        tables[lang] = set(re.findall(r"(?:\n\s*|['`], )(\w+): ['`]", block))
    return tables


def test_every_language_has_every_word() -> None:
    for text, opening in (((PORTAL / "js" / "i18n.js").read_text(), "export const WORDS"),
                          (SCRIPT.read_text(), "const WORDS")):
        tables = _tables(text, opening)
        assert set(tables) == {"en", "fr"}, tables.keys()
        assert len(tables["en"]) > 10
        assert tables["en"] == tables["fr"], tables["en"] ^ tables["fr"]


async def test_the_brand_is_validated_and_answered(http, tenant) -> None:
    h = auth(tenant.admin_key)
    settings = (await http.get("/v1/settings", headers=h)).json()
    for wrong in ("red", "#abc", "#0b5fff80", 12):
        r = await http.put("/v1/settings", headers=h, json={**settings, "brand_colour": wrong})
        assert r.status_code == 422, (wrong, r.text)
        assert "brand_colour" in r.text
    r = await http.put("/v1/settings", headers=h, json={
        **settings, "brand_colour": " #0B5FFF ", "widget_origins": [ORIGIN]})
    assert r.status_code == 200 and r.json()["brand_colour"] == "#0b5fff"

    brand = {"tenant_id": str(tenant.tenant_id), "name": "Acme", "colour": "#0b5fff"}
    for given in (tenant.slug, tenant.slug.upper(), str(tenant.tenant_id)):
        r = await http.get(f"/v1/portal/brand/{given}")
        assert r.status_code == 200 and r.json() == brand, given
    missing = await http.get("/v1/portal/brand/no-such-tenant")
    assert missing.status_code == 404
    assert missing.headers["content-type"] == "application/problem+json"

    widget = f"/v1/widget/{tenant.tenant_id}/brand"
    listed = await http.get(widget, headers={"Origin": ORIGIN})
    assert listed.status_code == 200 and listed.json() == brand
    assert listed.headers["access-control-allow-origin"] == ORIGIN
    for origin in ({"Origin": "https://elsewhere.example.com"}, {}):
        refused = await http.get(widget, headers=origin)
        assert refused.status_code == 403 and refused.json()["code"] == "origin_not_allowed"
        assert "access-control-allow-origin" not in refused.headers
