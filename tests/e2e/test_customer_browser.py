"""The customer pages in headless Chromium, against ``helpdesk serve`` on a database of
their own: a customer sets a password from a portal link, signs in, opens a ticket
with a file, sees an agent's reply arrive live (never the internal note beside it),
replies, pages their tickets, and finds a spent link said so; a second customer sees
none of it, in the page and on the live feed. The widget, on pages of other origins
(two more ports): the launcher opens, a ticket is sent with a file, an agent's reply
appears; the site's script cannot reach the widget's token; an origin not on the
list says the widget is not enabled and creates no ticket; a page whose stylesheet
hides every element still shows it.

The widget lives in a closed shadow root, which page scripts (and Playwright's
locators) cannot enter: the test reaches into it through the DevTools protocol
(``DOM.getDocument`` with ``pierce``), as an inspector would, and clicks and types
with the mouse and keyboard like a visitor.

Screenshots go to a temporary folder (``scripts/screenshots`` points them at
docs/screenshots/).
"""

from __future__ import annotations

import asyncio
import http.server
import re
import struct
import threading
import uuid
import zlib
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest
import websockets
from playwright.async_api import Browser, BrowserContext, CDPSession, Page, expect

from handlers.tenants import NewTenant, create_tenant_as_operator
from tests.e2e.ws_support import free_port, serve_process
from tests.support import pg
from tests.support.wait import until

pytestmark = [pytest.mark.slow, pytest.mark.timeout(180)]

WAIT_MS = 15_000
PASSWORD = "a long enough password"


def _png(width: int = 24, height: int = 24) -> bytes:
    """A real PNG image (a green square), for thumbnails that load."""
    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    rows = b"".join(b"\x00" + b"\x0b\x7a\x5a" * width for _ in range(height))
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header)
            + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b""))


PNG = _png()
COLOUR = "#0b7a5a"



def _site(pages: dict[str, bytes]) -> http.server.ThreadingHTTPServer:
    """A web site of another origin on a free port, serving ``pages`` (path: HTML)."""

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # the standard library's name
            body = pages.get(self.path.split("?")[0])
            self.send_response(200 if body else 404)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.end_headers()
            self.wfile.write(body or b"not found")

        def log_message(self, *args: Any) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", free_port()), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def _embedding(base: str, tenant: uuid.UUID, hostile: bool = False) -> bytes:
    style = "<style>* { display: none !important }</style>" if hostile else ""
    return (f"<!doctype html><html><head><title>Shop</title>{style}</head><body>"
            "<h1>Lighthouse Tea</h1><p id='site-text'>Our teas.</p>"
            f"<script src='{base}/widget/v1.js' data-tenant='{tenant}' data-poll-ms='300'>"
            "</script></body></html>").encode()


@dataclass
class Desk:
    base: str
    tenant: NewTenant
    site: str
    stranger: str

    @property
    def admin(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.tenant.admin_key.secret}"}

    async def api(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        headers = {**self.admin, **kwargs.pop("headers", {})}
        async with httpx.AsyncClient(base_url=self.base) as client:
            return await client.request(method, path, headers=headers, **kwargs)

    async def contact_link(self, email: str) -> str:
        contact = await self.api("POST", "/v1/contacts", json={"email": email})
        assert contact.status_code == 201, contact.text
        link = await self.api("POST", f"/v1/contacts/{contact.json()['id']}/portal-link")
        assert link.status_code == 201, link.text
        return str(link.json()["token"])

    async def customer(self, email: str) -> str:
        """A portal token for ``email``, a contact with a password (made here)."""
        token = await self.contact_link(email)
        async with httpx.AsyncClient(base_url=self.base) as client:
            done = await client.post("/v1/portal/auth/password",
                                     json={"token": token, "password": PASSWORD})
            assert done.status_code == 200, done.text
            signed = await client.post("/v1/portal/auth/sign-in", json={
                "tenant": self.tenant.slug, "email": email, "password": PASSWORD})
        assert signed.status_code == 200, signed.text
        return str(signed.json()["access_token"])


@pytest.fixture(scope="module")
async def desk(databases: pg.Databases) -> AsyncIterator[Desk]:
    """A tenant on a database of its own, served by a real ``helpdesk serve``; it lists
    one site's origin for its widget, and a second site (another port: another origin)
    is not on the list."""
    db = await databases.clone()
    sites: list[http.server.ThreadingHTTPServer] = []
    try:
        tenant = await create_tenant_as_operator(db.admin_url, "Lighthouse Tea")
        # Cheap password hashes: the tests sign in often, and the cost of argon2id is
        # not what they are about (tests/e2e/test_sign_in.py is).
        async with serve_process(db.runtime_url, PASSWORD_HASH_MEMORY_KIB="1024",
                                 PASSWORD_HASH_TIME_COST="1") as stream_url:
            base = stream_url.replace("ws://", "http://").removesuffix("/v1/stream")
            pages: dict[str, bytes] = {"/": _embedding(base, tenant.tenant_id),
                                       "/hostile": _embedding(base, tenant.tenant_id, True)}
            sites = [_site(pages), _site({"/": pages["/"]})]
            site, stranger = (f"http://127.0.0.1:{s.server_address[1]}" for s in sites)
            found = Desk(base, tenant, site, stranger)
            settings = (await found.api("GET", "/v1/settings")).json()
            put = await found.api("PUT", "/v1/settings", json={
                **settings, "widget_origins": [site], "brand_colour": COLOUR.upper()})
            assert put.status_code == 200, put.text
            assert put.json()["brand_colour"] == COLOUR  # kept in its canonical form
            yield found
    finally:
        for server in sites:
            server.shutdown()
            server.server_close()
        await databases.drop(db.name)


@pytest.fixture
async def context(browser: Browser) -> AsyncIterator[BrowserContext]:
    ctx = await browser.new_context(viewport={"width": 1100, "height": 900})
    ctx.set_default_timeout(WAIT_MS)
    try:
        yield ctx
    finally:
        await ctx.close()


def _watched(page: Page) -> list[str]:
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    return errors


# --- the portal ----------------------------------------------------------------------


async def _sign_in(page: Page, email: str) -> None:
    form = page.get_by_role("form", name="Sign in")
    await form.get_by_label("E-mail").fill(email)
    await form.get_by_label("Password").fill(PASSWORD)
    await form.get_by_role("button", name="Sign in").click()
    await expect(page.get_by_role("heading", name="My tickets")).to_be_visible()


async def _token_of(page: Page, desk: Desk) -> str:
    held = await page.evaluate(f"sessionStorage.getItem('portal:{desk.tenant.slug}')")
    return str(orjson.loads(held)["token"])


async def test_a_customer_sets_a_password_opens_a_ticket_and_follows_it_live(
        desk: Desk, context: BrowserContext, shots: Path, tmp_path: Path) -> None:
    email = f"ann-{uuid.uuid4().hex[:6]}@example.com"
    link = await desk.contact_link(email)
    page = await context.new_page()
    errors = _watched(page)
    portal = f"{desk.base}/portal/{desk.tenant.slug}/"

    # The link the support team sent: choose a password, then sign in with it.
    await page.goto(f"{portal}#/password/{link}")
    await expect(page.locator("#brand")).to_have_text("Lighthouse Tea")
    colour = await page.evaluate("getComputedStyle(document.querySelector('.topbar'))"
                                 ".backgroundColor")
    assert colour == "rgb(11, 122, 90)"  # the tenant's brand_colour
    await page.get_by_label("New password").fill(PASSWORD)
    await page.get_by_role("button", name="Set my password").click()
    await expect(page.get_by_text("Your password is set")).to_be_visible()
    await _sign_in(page, email)
    await expect(page.get_by_text("You have no tickets yet.")).to_be_visible()

    # A new ticket with a file and a ticket field open to customers (not required: the
    # widget's tickets on this desk have none).
    made = await desk.api("POST", "/v1/ticket-fields", json={
        "key": "kettle", "title": "Kettle model", "type": "dropdown", "intake": True,
        "options": [{"value": "whistler", "title": "Whistler"},
                    {"value": "quiet", "title": "Quiet one"}]})
    assert made.status_code == 201, made.text
    await page.get_by_role("link", name="New ticket").first.click()
    form = page.get_by_role("form", name="Ask for help")
    await form.get_by_label("Kettle model").select_option("whistler")
    await form.get_by_label("Subject").fill("The kettle whistles in C sharp")
    await form.get_by_label("Your message").fill("It used to be a C.")
    shot = tmp_path / "kettle.png"
    shot.write_bytes(PNG)
    await form.get_by_label("Attach files").set_input_files(str(shot))
    await form.get_by_role("button", name="Send").click()
    await expect(page.get_by_role("heading", name="The kettle whistles in C sharp")
                 ).to_be_visible()
    await expect(page.get_by_role("button", name="Download kettle.png")).to_be_visible()
    await expect(page.locator(".ticket-field-values")).to_have_text("Kettle modelWhistler")
    ticket_id = page.url.rsplit("/", 1)[1]
    await expect(page.locator("#live")).to_have_text("Live")

    # Staff write an internal note and then a public reply: the reply arrives live.
    note = await desk.api("POST", f"/v1/tickets/{ticket_id}/messages",
                          json={"body": "INTERNAL: customer is on the old plan",
                                "visibility": "internal"})
    assert note.status_code == 201, note.text
    reply = await desk.api("POST", f"/v1/tickets/{ticket_id}/messages",
                           json={"body": "Try descaling it.", "visibility": "public"})
    assert reply.status_code == 201, reply.text
    thread = page.locator("ol.thread")
    await expect(thread.get_by_text("Try descaling it.")).to_be_visible()
    await expect(thread.locator(":scope > li")).to_have_count(2)
    assert "INTERNAL" not in await page.content()

    # The customer replies.
    reply_form = page.get_by_role("form", name="Reply")
    await reply_form.get_by_label("Your reply").fill("Descaled. Now it is a D.")
    await reply_form.get_by_role("button", name="Send").click()
    await expect(thread.locator(":scope > li")).to_have_count(3)
    await expect(thread.locator(":scope > li").last).to_contain_text("Descaled. Now it is a D.")
    await expect(reply_form.get_by_role("button", name="Send")).to_be_enabled()
    # An image with no src yet is "complete" too: wait for the fetched file itself.
    thumb = page.locator("img.thumbnail")
    await expect(thumb).to_have_attribute("src", re.compile(r"^blob:"))
    await page.wait_for_function("img => img.complete && img.naturalWidth === 24",
                                 arg=await thumb.element_handle())
    await page.screenshot(path=str(shots / "portal-ticket.png"), full_page=True)
    assert "INTERNAL" not in await page.content()

    # "My tickets", newest first, ten at a time.
    token = await _token_of(page, desk)
    async with httpx.AsyncClient(base_url=desk.base) as client:
        for n in range(10):
            made = await client.post("/v1/portal/tickets", headers={
                "Authorization": f"Bearer {token}"}, json={"subject": f"Older {n}", "body": "x"})
            assert made.status_code == 201, made.text
    await page.get_by_role("link", name="My tickets", exact=True).click()
    cards = page.locator(".ticket-card")
    await expect(cards).to_have_count(10)
    await expect(cards.first).to_contain_text("Older 9")
    await page.get_by_role("button", name="Load more").click()
    await expect(cards).to_have_count(11)
    await expect(cards.last).to_contain_text("The kettle whistles")
    await expect(page.get_by_role("button", name="Load more")).to_be_hidden()

    # The spent link says so, with the problem as the API answered it, and how to get
    # another.
    await page.get_by_role("button", name="Sign out").click()
    await expect(page.get_by_text("You are signed out.")).to_be_visible()
    await page.goto(f"{portal}#/password/{link}")
    await page.get_by_label("New password").fill("another long password")
    await page.get_by_role("button", name="Set my password").click()
    alert = page.get_by_role("alert")
    await expect(alert).to_contain_text("This link has been used or has expired.")
    await expect(alert).to_contain_text("Ask the support team for a new one")
    async with httpx.AsyncClient(base_url=desk.base) as client:
        spent = await client.post("/v1/portal/auth/password",
                                  json={"token": link, "password": PASSWORD})
    assert spent.status_code == 410
    await expect(alert).to_contain_text(spent.json()["title"])
    await expect(alert).to_contain_text(spent.json()["detail"])
    assert not errors, errors


async def test_a_second_customer_sees_none_of_it_in_the_page_or_on_the_feed(
        desk: Desk, context: BrowserContext) -> None:
    first = await desk.customer(f"first-{uuid.uuid4().hex[:6]}@example.com")
    second_email = f"second-{uuid.uuid4().hex[:6]}@example.com"
    second = await desk.customer(second_email)
    async with httpx.AsyncClient(base_url=desk.base) as client:
        theirs = (await client.post("/v1/portal/tickets", headers={
            "Authorization": f"Bearer {first}"}, json={"subject": "Mine alone", "body": "x"})
        ).json()["id"]
        own = (await client.post("/v1/portal/tickets", headers={
            "Authorization": f"Bearer {second}"}, json={"subject": "Second's", "body": "y"})
        ).json()["id"]
    feed_url = desk.base.replace("http://", "ws://") + "/v1/portal/stream"
    async with websockets.connect(feed_url) as a, websockets.connect(feed_url) as b:
        for socket, token in ((a, first), (b, second)):
            await socket.send(orjson.dumps({"op": "auth", "token": token}).decode())
            assert orjson.loads(await socket.recv())["type"] == "authenticated"
        for body, visibility in (("note on first", "internal"), ("reply to first", "public")):
            r = await desk.api("POST", f"/v1/tickets/{theirs}/messages",
                               json={"body": body, "visibility": visibility})
            assert r.status_code == 201, r.text
        # The first customer's feed: their ticket's public reply, not the note before it.
        got = orjson.loads(await asyncio.wait_for(a.recv(), 10))
        assert got["type"] == "event" and got["event"]["stream_id"] == theirs, got
        assert got["event"]["type"] == "MessageAdded" and "data" not in got["event"]
        note_seq = got["seq"] - 1
        reply = await desk.api("POST", f"/v1/tickets/{own}/messages",
                               json={"body": "reply to second", "visibility": "public"})
        assert reply.status_code == 201
        # The second's first event is their own ticket's: nothing of the first's came.
        mine = orjson.loads(await asyncio.wait_for(b.recv(), 10))
        assert mine["event"]["stream_id"] == own, mine
        # And resuming from before the note replays the reply alone.
        async with websockets.connect(feed_url) as again:
            await again.send(orjson.dumps({"op": "auth", "token": first,
                                           "after_seq": note_seq - 1}).decode())
            assert orjson.loads(await again.recv())["type"] == "authenticated"
            replayed = orjson.loads(await asyncio.wait_for(again.recv(), 10))
            assert replayed["seq"] == got["seq"], replayed

    page = await context.new_page()
    errors = _watched(page)
    await page.goto(f"{desk.base}/portal/{desk.tenant.slug}/")
    await _sign_in(page, second_email)
    cards = page.locator(".ticket-card")
    await expect(cards).to_have_count(1)
    await expect(cards).to_contain_text("Second's")
    await page.goto(f"{desk.base}/portal/{desk.tenant.slug}/#/tickets/{theirs}")
    await expect(page.get_by_role("heading", name="Ticket not found")).to_be_visible()
    assert "Mine alone" not in await page.content()
    assert "reply to first" not in await page.content()
    assert not errors, errors


async def test_a_customer_copied_on_a_ticket_reads_it_and_is_offered_no_reply(
        desk: Desk, context: BrowserContext) -> None:
    requester = f"asker-{uuid.uuid4().hex[:6]}@example.com"
    copied = f"copied-{uuid.uuid4().hex[:6]}@example.com"
    await desk.customer(copied)
    opened = await desk.api("POST", "/v1/tickets", json={
        "subject": "Shared order", "body": "the order is late",
        "requester": {"email": requester}})
    assert opened.status_code == 201, opened.text
    tid = opened.json()["id"]
    cc = await desk.api("POST", f"/v1/tickets/{tid}/ccs", json={"add": [{"email": copied}]})
    assert cc.status_code == 200, cc.text
    page = await context.new_page()
    errors = _watched(page)
    await page.goto(f"{desk.base}/portal/{desk.tenant.slug}/")
    await _sign_in(page, copied)
    await page.get_by_role("link", name="Shared order").click()
    await expect(page.get_by_role("heading", name="Shared order")).to_be_visible()
    await expect(page.locator(".thread")).to_contain_text("the order is late")
    await expect(page.locator(".copied-note")).to_contain_text("You are copied on this ticket")
    await expect(page.get_by_role("form", name="Reply")).to_have_count(0)
    assert not errors, errors


async def test_the_portal_fits_a_phone_and_speaks_french(browser: Browser, desk: Desk) -> None:
    ctx = await browser.new_context(viewport={"width": 375, "height": 740},
                                    locale="fr-FR", device_scale_factor=2)
    ctx.set_default_timeout(WAIT_MS)
    try:
        page = await ctx.new_page()
        await page.goto(f"{desk.base}/portal/{desk.tenant.slug}/")
        await expect(page.get_by_role("heading",
                                      name="Connexion à votre centre d’aide")).to_be_visible()
        assert await page.evaluate("document.documentElement.lang") == "fr"
        assert await page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
        # The controls are reached with Tab, in order.
        await page.get_by_label("Adresse e-mail").focus()
        await page.keyboard.press("Tab")
        assert await page.evaluate("document.activeElement.type") == "password"
        await page.keyboard.press("Tab")
        assert await page.evaluate("document.activeElement.textContent") == "Se connecter"
        await page.goto(f"{desk.base}/portal/no-such-tenant/")
        await expect(page.get_by_role("heading",
                                      name="Cette adresse ne désigne aucun centre d’aide.")
                     ).to_be_visible()
        await expect(page.get_by_role("alert")).to_contain_text("no tenant")
    finally:
        await ctx.close()


# --- the widget ----------------------------------------------------------------------


class ClosedShadow:
    """The widget's closed shadow root, reached through the DevTools protocol."""

    def __init__(self, page: Page, cdp: CDPSession) -> None:
        self.page, self.cdp = page, cdp
        self.root = ""
        self.root_node = 0

    @classmethod
    async def of(cls, page: Page) -> ClosedShadow:
        found = cls(page, await page.context.new_cdp_session(page))

        async def located() -> bool:
            doc = await found.cdp.send("DOM.getDocument", {"depth": -1, "pierce": True})
            node = _find(doc["root"], "HELPDESK-WIDGET")
            if node is None or not node.get("shadowRoots"):
                return False
            shadow = node["shadowRoots"][0]
            assert shadow["shadowRootType"] == "closed"
            found.root_node = shadow["nodeId"]
            resolved = await found.cdp.send("DOM.resolveNode", {"nodeId": shadow["nodeId"]})
            found.root = resolved["object"]["objectId"]
            return True

        await until(located, timeout=10, interval=0.1, what="the widget's shadow root")
        return found

    async def run(self, function: str, *args: Any) -> Any:
        answer = await self.cdp.send("Runtime.callFunctionOn", {
            "objectId": self.root, "functionDeclaration": function,
            "arguments": [{"value": a} for a in args], "returnByValue": True,
            "awaitPromise": True})
        assert "exceptionDetails" not in answer, answer
        return answer["result"].get("value")

    async def text(self) -> str:
        return str(await self.run("function() { return this.querySelector('.w').innerText; }"))

    async def wait_text(self, wanted: str) -> str:
        async def shown() -> bool:
            return wanted in await self.text()

        await until(shown, timeout=WAIT_MS / 1000, interval=0.1,
                    what=lambda: f"{wanted!r} in the widget")
        return await self.text()

    async def click(self, selector: str) -> None:
        """A real mouse click in the middle of the element."""
        box = await self.run("function(s) { const r = this.querySelector(s)"
                             ".getBoundingClientRect(); return [r.x, r.y, r.width, r.height]; }",
                             selector)
        x, y, w, h = box
        assert w > 0 and h > 0, (selector, box)
        await self.page.mouse.click(x + w / 2, y + h / 2)

    async def type(self, selector: str, text: str) -> None:
        await self.run("function(s) { this.querySelector(s).focus(); }", selector)
        await self.page.keyboard.type(text)

    async def visible(self, selector: str) -> bool:
        return bool(await self.run(
            "function(s) { return this.querySelector(s).checkVisibility(); }", selector))

    async def attach(self, selector: str, path: Path) -> None:
        found = await self.cdp.send("DOM.querySelector",
                                    {"nodeId": self.root_node, "selector": selector})
        await self.cdp.send("DOM.setFileInputFiles", {"files": [str(path)],
                                                      "nodeId": found["nodeId"]})


def _find(node: dict[str, Any], name: str) -> dict[str, Any] | None:
    if node.get("nodeName") == name:
        return node
    for child in [*node.get("children", []), *node.get("shadowRoots", [])]:
        hit = _find(child, name)
        if hit is not None:
            return hit
    return None


async def _tickets(desk: Desk) -> list[dict[str, Any]]:
    listed = await desk.api("GET", "/v1/tickets", params={"source": "chat", "limit": 100})
    assert listed.status_code == 200, listed.text
    return list(listed.json()["data"])


async def test_the_widget_on_a_listed_site_sends_a_ticket_and_shows_the_reply(
        desk: Desk, context: BrowserContext, shots: Path, tmp_path: Path) -> None:
    page = await context.new_page()
    errors = _watched(page)
    tokens: list[str] = []
    page.on("request", lambda r: tokens.append(r.headers["authorization"].split()[1])
            if "authorization" in r.headers else None)
    await page.goto(f"{desk.site}/")
    widget = await ClosedShadow.of(page)
    assert await widget.visible(".launch")
    await widget.click(".launch")
    await widget.wait_text("Contact Lighthouse Tea")
    # Keyboard: the panel's first field has the focus; Escape closes, back to the launcher.
    assert await widget.run("function() { return this.activeElement.type; }") == "email"
    await page.keyboard.press("Escape")
    assert await widget.run("function() { return this.activeElement.className; }") == "launch"
    await page.keyboard.press("Enter")
    email = f"visitor-{uuid.uuid4().hex[:6]}@example.com"
    await widget.type("input[type=email]", email)
    await widget.type("textarea", "Is the smoky one in stock?")
    receipt = tmp_path / "receipt.png"
    receipt.write_bytes(PNG)
    await widget.attach("input[type=file]", receipt)
    await widget.click("button[type=submit]")
    await widget.wait_text("Replies appear here")

    # The page's own script cannot reach the token: not through the host (its shadow
    # root is closed), storage, cookies, globals or markup, nor through a fetch wrapper
    # it installs now.
    token = tokens[-1]
    reach = await page.evaluate("""(token) => {
        window.seen = [];
        const original = window.fetch;
        window.fetch = (...args) => {
          window.seen.push(JSON.stringify(args));
          return original(...args);
        };
        const globals = Object.keys(window).map((k) => {
          try { return String(window[k]); } catch { return ''; }
        });
        return {
          shadow: document.querySelector('helpdesk-widget').shadowRoot,
          storage: localStorage.length + sessionStorage.length, cookie: document.cookie,
          markup: document.documentElement.outerHTML.includes(token),
          globals: globals.some((v) => v.includes(token)),
        };
    }""", token)
    assert reach == {"shadow": None, "storage": 0, "cookie": "", "markup": False,
                     "globals": False}

    [ticket] = [t for t in await _tickets(desk) if t["subject"] == "Is the smoky one in stock?"]
    assert ticket["requester"]["email"] == email
    messages = (await desk.api("GET", f"/v1/tickets/{ticket['id']}/messages")).json()["data"]
    assert [a["name"] for a in messages[0]["attachments"]] == ["receipt.png"]
    await desk.api("POST", f"/v1/tickets/{ticket['id']}/messages",
                   json={"body": "secret staff note", "visibility": "internal"})
    reply = await desk.api("POST", f"/v1/tickets/{ticket['id']}/messages",
                           json={"body": "Yes, 40 tins left.", "visibility": "public"})
    assert reply.status_code == 201
    shown = await widget.wait_text("Yes, 40 tins left.")
    assert "secret staff note" not in shown
    await widget.type("form[aria-label='Your reply'] textarea", "I'll take two.")
    order = tmp_path / "order.png"
    order.write_bytes(PNG)
    await widget.attach("form[aria-label='Your reply'] input[type=file]", order)
    await widget.click("form[aria-label='Your reply'] button[type=submit]")
    await widget.wait_text("order.png")
    messages = (await desk.api("GET", f"/v1/tickets/{ticket['id']}/messages")).json()["data"]
    assert [(m["body"], [a["name"] for a in m["attachments"]]) for m in messages[-1:]] == [
        ("I'll take two.", ["order.png"])]
    assert await page.evaluate("window.seen") == []  # the widget kept its own fetch
    await page.screenshot(path=str(shots / "widget.png"))
    assert not errors, errors


async def test_the_widget_on_a_site_not_listed_is_not_enabled_and_sends_nothing(
        desk: Desk, context: BrowserContext) -> None:
    before = len(await _tickets(desk))
    page = await context.new_page()
    await page.goto(f"{desk.stranger}/")
    widget = await ClosedShadow.of(page)
    await widget.click(".launch")
    text = await widget.wait_text("Not enabled")
    assert "not enabled on this site" in text
    assert await widget.run("function() { return this.querySelector('form'); }") is None
    assert len(await _tickets(desk)) == before


async def test_a_stylesheet_hiding_every_element_does_not_hide_the_widget(
        desk: Desk, context: BrowserContext, shots: Path) -> None:
    page = await context.new_page()
    await page.goto(f"{desk.site}/hostile")
    widget = await ClosedShadow.of(page)
    assert not await page.locator("#site-text").is_visible()  # the page's rule holds
    assert await widget.visible(".launch")
    await widget.click(".launch")
    await widget.wait_text("Contact Lighthouse Tea")
    assert await widget.visible("input[type=email]")
    await page.screenshot(path=str(shots / "widget-hostile.png"))
