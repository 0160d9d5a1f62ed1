"""The portal under a tenant's own host name, through a real reverse proxy: Debian's
nginx runs docs/examples/portal-nginx.conf (its host name, slug and upstream replaced)
in front of ``helpdesk serve`` (the desk of ``tests/e2e/test_customer_browser.py``),
and headless Chromium loads the portal from that name (``*.localhost`` names the
loopback address in Chromium, so no resolver is touched): the root leads to the
tenant's portal, a customer signs in and opens a ticket, and an agent's reply
arrives over the live feed's WebSocket through the proxy. Other host names, other
tenants' portals and the staff API are not served under the name.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from playwright.async_api import BrowserContext, expect

from tests.e2e.test_customer_browser import Desk, _sign_in, _watched, context, desk
from tests.e2e.ws_support import free_port

__all__ = ["context", "desk"]

pytestmark = [pytest.mark.slow, pytest.mark.timeout(180)]

CONFIG = Path(__file__).parents[2] / "docs" / "examples" / "portal-nginx.conf"
NGINX = Path("/usr/sbin/nginx")
HOST = "lighthouse.localhost"


def _nginx() -> Path:
    """Debian's nginx, installed with apt when missing and this process may (root)."""
    if NGINX.exists():
        return NGINX
    apt = shutil.which("apt-get")
    if apt is None or os.geteuid() != 0:
        pytest.fail(f"{NGINX} is missing: apt-get install nginx-light to run this test")
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    for command in ([apt, "update", "-qq"], [apt, "install", "-y", "-qq", "nginx-light"]):
        subprocess.run(command, env=env, capture_output=True, timeout=600, check=True)
    return NGINX


@dataclass
class Proxy:
    url: str  # http://lighthouse.localhost:<port>
    port: int


def _config(folder: Path, port: int, slug: str, upstream: str) -> Path:
    """A whole nginx configuration around the documented server block: the block as
    the docs give it (host name, slug, upstream and port replaced), plus a default
    server that answers every other name with 404."""
    block = (CONFIG.read_text().replace("listen 80;", f"listen 127.0.0.1:{port};")
             .replace("help.acme.example", HOST).replace("/portal/acme/", f"/portal/{slug}/")
             .replace("helpdesk:8000", upstream))
    (folder / "portal.conf").write_text(block)
    temp = "".join(f"{kind}_temp_path {folder}/{kind};\n"
                   for kind in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi"))
    user = "user root;\n" if os.geteuid() == 0 else ""
    whole = folder / "nginx.conf"
    whole.write_text(
        f"{user}daemon off;\nworker_processes 1;\npid {folder}/nginx.pid;\n"
        f"error_log {folder}/error.log warn;\nevents {{ worker_connections 256; }}\n"
        f"http {{\naccess_log off;\n{temp}"
        f"server {{ listen 127.0.0.1:{port} default_server; return 404; }}\n"
        f"include {folder}/portal.conf;\n}}\n")
    return whole


@pytest.fixture(scope="module")
def proxy(desk: Desk, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Proxy]:
    folder = tmp_path_factory.mktemp("nginx")
    port = free_port()
    conf = _config(folder, port, desk.tenant.slug, desk.base.removeprefix("http://"))
    nginx = str(_nginx())
    checked = subprocess.run([nginx, "-t", "-p", str(folder), "-c", str(conf)],
                             capture_output=True, text=True, check=False)
    assert checked.returncode == 0, checked.stderr
    started = folder / "stderr.log"
    with started.open("wb") as stderr:
        proc = subprocess.Popen([nginx, "-p", str(folder), "-c", str(conf)],
                                stdout=subprocess.DEVNULL, stderr=stderr)
    try:
        def up() -> bool:
            assert proc.poll() is None, started.read_text()
            try:
                return httpx.get(f"http://127.0.0.1:{port}/").status_code == 404
            except httpx.TransportError:
                return False

        for _ in range(200):  # a synchronous fixture: nginx starts in milliseconds
            if up():
                break
            time.sleep(0.05)
        else:
            pytest.fail(f"nginx did not answer: {(folder / 'error.log').read_text()}")
        yield Proxy(f"http://{HOST}:{port}", port)
    finally:
        proc.terminate()
        proc.wait(10)


async def _through(proxy: Proxy, path: str, host: str = HOST) -> httpx.Response:
    async with httpx.AsyncClient() as client:
        return await client.get(f"http://127.0.0.1:{proxy.port}{path}", headers={"Host": host})


async def test_the_host_name_serves_that_tenants_portal_and_nothing_else(
        desk: Desk, proxy: Proxy) -> None:
    root = await _through(proxy, "/")
    assert root.status_code == 302 and root.headers["location"].endswith(
        f"/portal/{desk.tenant.slug}/"), root.headers
    page = await _through(proxy, f"/portal/{desk.tenant.slug}/")
    assert page.status_code == 200 and "content-security-policy" in page.headers
    brand = await _through(proxy, f"/v1/portal/brand/{desk.tenant.slug}")
    assert brand.json()["name"] == "Lighthouse Tea"
    for path in ("/portal/someone-else/", "/v1/tickets", "/console/", "/widget/v1.js"):
        assert (await _through(proxy, path)).status_code == 404, path
    assert (await _through(proxy, "/", host="other.localhost")).status_code == 404


async def test_a_customer_uses_the_portal_through_the_proxy(
        desk: Desk, proxy: Proxy, context: BrowserContext) -> None:
    email = "proxied@example.com"
    await desk.customer(email)
    page = await context.new_page()
    errors = _watched(page)
    seen: list[str] = []
    page.on("request", lambda r: seen.append(r.url))
    await page.goto(f"{proxy.url}/")
    assert page.url == f"{proxy.url}/portal/{desk.tenant.slug}/"
    await expect(page.locator("#brand")).to_have_text("Lighthouse Tea")
    await _sign_in(page, email)
    await expect(page.locator("#live")).to_have_text("Live")  # the WebSocket, proxied

    await page.get_by_role("link", name="New ticket").first.click()
    form = page.get_by_role("form", name="Ask for help")
    await form.get_by_label("Subject").fill("Through the proxy")
    await form.get_by_label("Your message").fill("Hello from my own host name.")
    await form.get_by_role("button", name="Send").click()
    await expect(page.get_by_role("heading", name="Through the proxy")).to_be_visible()
    ticket_id = page.url.rsplit("/", 1)[1]
    reply = await desk.api("POST", f"/v1/tickets/{ticket_id}/messages",
                           json={"body": "Answered live.", "visibility": "public"})
    assert reply.status_code == 201, reply.text
    await expect(page.locator("ol.thread").get_by_text("Answered live.")).to_be_visible()

    # A reload keeps the session (this tab's storage, renewed through the proxied
    # refresh cookie when needed); every request went to the tenant's host name.
    await page.reload()
    await expect(page.get_by_role("heading", name="Through the proxy")).to_be_visible()
    assert seen and all(u.startswith(proxy.url) for u in seen), seen
    assert not errors, errors
