"""The console in headless Chromium, against ``helpdesk serve`` on a real database seeded
with the demo: an agent signs in with e-mail and password, filters the queue, loads
more, opens a ticket and replies; their access token is renewed through the refresh
cookie and signing out ends the session; a second browser sees a new ticket arrive
live; an If-Match conflict is shown; an analyst (with an API key) sees the charts and
the satisfaction score and response rate, and cannot open a ticket, and the split chart
names groups and organizations, and an agent sees the ticket's rating; an auditor
verifies the chain. Groups, organizations, contacts and ticket fields: the queue filters
by group, organization and requester; a contact's and an organization's pages list their
tickets; field values are edited and a state the fields are required for names them; a
group change the assignee is no member of is refused with 409 and said so; a contact and
an organization are edited, and 422, 412 and 409 refusals are shown. The contacts list,
a contact, an organization, the assign form and the field editor fit a phone's width and
a laptop at 200% zoom, with every control reached by keyboard and its focus drawn.

The run saves screenshots of the queue, a ticket and the analytics page to a temporary
folder; ``scripts/screenshots`` runs it to refresh docs/screenshots/ (the README shows
them), and only that does.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import asyncpg
import httpx
import pytest
from playwright.async_api import Browser, BrowserContext, Page, expect

from domain.clock import SystemClock
from eventstore.pool import create_pool
from eventstore.store import EventStore
from handlers.demo.seed import DemoTenant, seed_demo
from tests.e2e.ws_support import serve_process
from tests.support import pg
from tests.support.oidc import CLIENT_ID, CLIENT_SECRET, running_provider
from tests.support.wait import until

pytestmark = [pytest.mark.slow, pytest.mark.timeout(240)]

WAIT_MS = 15_000
REPLAY_WINDOW = 2


@dataclass
class Console:
    base: str
    db: pg.TestDatabase
    rich: DemoTenant
    small: DemoTenant

    def key(self, who: str, tenant: DemoTenant | None = None) -> str:
        """The secret of the key of ``who`` (a person's name, or a key's name)."""
        keys = (tenant or self.rich).keys
        return next(k.secret for k in keys if who in (k.agent, k.name))

    def login(self, who: str) -> tuple[str, str]:
        """The e-mail and password of the person ``who`` of the rich tenant."""
        key = next(k for k in self.rich.keys if k.agent == who)
        assert key.email and key.password
        return key.email, key.password

    async def api(self, method: str, path: str, who: str, **kwargs: Any) -> httpx.Response:
        headers = {"Authorization": f"Bearer {self.key(who)}", **kwargs.pop("headers", {})}
        async with httpx.AsyncClient(base_url=self.base) as http:
            return await http.request(method, path, **kwargs, headers=headers)


@pytest.fixture(scope="module")
async def console(databases: pg.Databases) -> AsyncIterator[Console]:
    """The demo on a database of its own, served by a real ``helpdesk serve`` process
    that also runs the scheduler and projectors (analytics)."""
    db = await databases.clone()
    try:
        pool = await create_pool(db.runtime_url, min_size=1, max_size=2)
        try:
            store = EventStore(pool)
            rich, small = await seed_demo(db.admin_url, store, SystemClock().now())
            await store.notifier.flush()
        finally:
            await pool.close()
        # A replay window of two events: a feed that misses three gets a gap.
        async with serve_process(db.runtime_url, RUN_SCHEDULER="true",
                                 PROJECTOR_POLL_INTERVAL="0.2",
                                 WS_REPLAY_WINDOW=str(REPLAY_WINDOW)) as stream_url:
            base = stream_url.replace("ws://", "http://").removesuffix("/v1/stream")
            yield Console(base, db, rich, small)
    finally:
        await databases.drop(db.name)


@pytest.fixture
async def context(browser: Browser) -> AsyncIterator[BrowserContext]:
    """A fresh browser profile (its own session storage) for one person."""
    ctx = await browser.new_context(viewport={"width": 1280, "height": 900})
    ctx.set_default_timeout(WAIT_MS)
    try:
        yield ctx
    finally:
        await ctx.close()


async def _console_page(context: BrowserContext, console: Console) -> Page:
    page = await context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    # A refused sign-in or refresh is an answer the page shows, not a script error.
    page.on("console", lambda m: errors.append(m.text)
            if m.type == "error" and "401" not in m.text else None)
    page.errors = errors  # type: ignore[attr-defined]
    await page.goto(f"{console.base}/console/")
    return page


async def signed_in(context: BrowserContext, console: Console, secret: str) -> Page:
    """A page of the console, signed in with an API key the way a program's owner does."""
    page = await _console_page(context, console)
    form = page.get_by_role("form", name="Sign in with an API key")
    await form.get_by_label("API key", exact=True).fill(secret)
    await form.get_by_role("button", name="Sign in").click()
    await expect(page.locator("#who")).not_to_be_empty()
    return page


async def signed_in_as(context: BrowserContext, console: Console, who: str) -> Page:
    """A page of the console, signed in as the person ``who`` with e-mail and password."""
    email, password = console.login(who)
    page = await _console_page(context, console)
    form = page.get_by_role("form", name="Sign in with your e-mail and password")
    await form.get_by_label("Tenant", exact=True).fill(console.rich.slug)
    await form.get_by_label("E-mail", exact=True).fill(email)
    await form.get_by_label("Password", exact=True).fill(password)
    await form.get_by_role("button", name="Sign in").click()
    await expect(page.locator("#who")).to_contain_text(who)
    return page


def refusals_asked_for(page: Page, status: int) -> None:
    """Forget the browser's log lines of refused calls with ``status``: the test asked
    for them (the page showing them is what it checks)."""
    errors = page.errors  # type: ignore[attr-defined]
    errors[:] = [e for e in errors if f"status of {status} " not in e]


def no_script_errors(page: Page) -> None:
    errors = page.errors  # type: ignore[attr-defined]
    assert not errors, errors


async def test_an_agent_filters_loads_more_opens_a_ticket_and_replies(console, context, shots):
    page = await signed_in_as(context, console, "Jonas Weber")
    await expect(page).to_have_url(re.compile(r"#/queue$"))
    await expect(page.locator("#who")).to_contain_text("Jonas Weber")
    nav = page.get_by_role("navigation", name="Sections")
    # Agents: no analytics, no audit.
    await expect(nav.get_by_role("link")).to_have_text(["Queue", "Contacts"])
    items = page.locator(".ticket-item")
    await expect(items).to_have_count(20)
    await expect(page.locator("#live")).to_have_text("Live")
    await page.screenshot(path=str(shots / "queue.png"))
    # Keyset pages: "Load more" follows next_cursor; no page numbers, no totals.
    await expect(page.get_by_text(re.compile(r"\bpage \d|\bof \d+\b", re.I))).to_have_count(0)
    # From the keyboard: the new tickets' first link takes the focus.
    await page.get_by_role("button", name="Load more").focus()
    await page.keyboard.press("Enter")
    await expect(items).to_have_count(40)
    await expect(items.nth(20).get_by_role("link")).to_be_focused()
    await page.get_by_role("button", name="Load more").click()
    await expect(items).to_have_count(console.rich.tickets)
    await expect(page.get_by_role("button", name="Load more")).to_be_hidden()
    await expect(page.get_by_text("No more tickets.")).to_be_visible()

    # Filters: what the queue shows is what the API lists for them.
    await page.get_by_role("checkbox", name="Urgent", exact=True).check()
    await page.get_by_role("checkbox", name="Open", exact=True).check()
    await expect(page).to_have_url(re.compile(r"#/queue\?state=open&priority=urgent$"))
    listed = (await console.api("GET", "/v1/tickets", "Jonas Weber", params={
        "state": "open", "priority": "urgent", "limit": 100})).json()["data"]
    assert listed
    await expect(items).to_have_count(len(listed))
    await expect(items.locator("h2")).to_have_text([t["subject"] for t in listed])
    await page.get_by_label("Assignee", exact=True).select_option(label="Unassigned")
    await expect(page).to_have_url(re.compile(r"&assignee=none$"))
    unassigned = (await console.api("GET", "/v1/tickets", "Jonas Weber", params={
        "state": "open", "priority": "urgent", "assignee": "none"})).json()["data"]
    await expect(items).to_have_count(len(unassigned))
    if not unassigned:
        await expect(page.get_by_text("No tickets match these filters.")).to_be_visible()
    await page.get_by_role("button", name="Clear").click()
    await expect(items).to_have_count(20)

    # Open a ticket and answer it.
    ticket = listed[0]
    await page.get_by_role("link", name=ticket["subject"]).first.click()
    await expect(page.get_by_role("heading", level=1)).to_have_text(ticket["subject"])
    before = await _messages(console, ticket["id"])
    await expect(page.locator(".message")).to_have_count(len(before))
    reply = f"We're on it; the fix is rolling out. ({uuid.uuid4().hex[:6]})"
    await page.get_by_label("Message", exact=True).fill(reply)
    # A double click sends once: the button is busy at once, and the draft's
    # Idempotency-Key would make a second request a replay anyway.
    await page.get_by_role("button", name="Send reply").dblclick()
    mine = page.locator(".message", has_text=reply)
    await expect(mine).to_have_count(1)
    await expect(mine).to_have_class(re.compile(r"message-public"))
    await expect(mine.locator(".message-author")).to_have_text("Jonas Weber")
    await expect(page.get_by_label("Message", exact=True)).to_have_value("")
    note = f"Customer is on the EU-2 cluster. ({uuid.uuid4().hex[:6]})"
    await page.get_by_label("Internal note (agents only)").check()
    await page.get_by_label("Message", exact=True).fill(note)
    await page.get_by_role("button", name="Add internal note").click()
    noted = page.locator(".message", has_text=note)
    await expect(noted).to_have_class(re.compile(r"message-internal"))
    await expect(noted).to_contain_text("Not visible to the customer")
    after = await _messages(console, ticket["id"])
    assert [m["body"] for m in after[len(before):]] == [reply, note]
    assert [m["visibility"] for m in after[len(before):]] == ["public", "internal"]
    # SLA clocks: the first response was met by the reply.
    await expect(page.locator(".clock[data-metric=first_response] .clock-status")).to_have_text(
        re.compile(r"^Met"))
    await page.screenshot(path=str(shots / "ticket.png"), full_page=True)
    no_script_errors(page)


STORED = "helpdesk.console.credential"


async def test_the_access_token_is_renewed_through_its_cookie_and_sign_out_ends_it(
        console, context):
    page = await signed_in_as(context, console, "Priya Raman")
    # The refresh token is in an httpOnly cookie for the auth path only: no script sees it.
    cookies = {c["name"]: c for c in await context.cookies()}
    first = cookies["hd_refresh"]
    assert first["httpOnly"] and first["path"] == "/v1/auth" and first["sameSite"] == "Strict"
    assert "hd_refresh" not in await page.evaluate("document.cookie")
    kept = await page.evaluate(f"JSON.parse(sessionStorage.getItem('{STORED}'))")
    assert kept["kind"] == "access_token" and "hd_refresh" not in str(kept)
    async with httpx.AsyncClient(base_url=console.base) as http:
        whoami = await http.get("/v1/auth/me",
                                headers={"Authorization": f"Bearer {kept['token']}"})
    assert whoami.json()["credential"]["kind"] == "session"

    # The access token no longer works (as when it has expired): reloading the page
    # renews it through the cookie, which rotates, and the person stays signed in.
    await page.evaluate(f"""() => {{
        const c = JSON.parse(sessionStorage.getItem('{STORED}'));
        c.token = c.token.slice(0, -4) + 'AAAA';
        sessionStorage.setItem('{STORED}', JSON.stringify(c));
    }}""")
    await page.reload()
    await expect(page.locator("#who")).to_contain_text("Priya Raman")
    await expect(page.locator(".ticket-item").first).to_be_visible()
    renewed = await page.evaluate(f"JSON.parse(sessionStorage.getItem('{STORED}'))")
    assert not renewed["token"].endswith("AAAA")  # a token the refresh handed out
    second = {c["name"]: c for c in await context.cookies()}["hd_refresh"]
    assert second["value"] != first["value"]

    # Signing out ends the session on the server: the cookie is cleared, and neither
    # the last refresh token nor the access token works any more.
    await page.locator("#sign-out").click()
    await expect(page.get_by_role("form", name="Sign in with your e-mail and password")
                 ).to_be_visible()

    async def cleared() -> bool:  # the sign-out request runs while the page moves on
        return "hd_refresh" not in {c["name"] for c in await context.cookies()}

    await until(cleared, timeout=10, interval=0.1, what="the refresh cookie to be cleared")
    async with httpx.AsyncClient(base_url=console.base) as http:
        await until(lambda: _refused(http, "/v1/auth/me", renewed["token"]), timeout=10,
                    interval=0.1, what="the access token to stop")
        refused = await http.post("/v1/auth/refresh",
                                  headers={"Cookie": f"hd_refresh={second['value']}"})
        assert refused.status_code == 401
    no_script_errors(page)


async def _refused(http: httpx.AsyncClient, path: str, token: str) -> bool:
    answer = await http.get(path, headers={"Authorization": f"Bearer {token}"})
    return answer.status_code == 401


async def _messages(console: Console, ticket_id: str) -> list[dict[str, Any]]:
    answer = await console.api("GET", f"/v1/tickets/{ticket_id}/messages", "Jonas Weber",
                               params={"limit": 100})
    assert answer.status_code == 200, answer.text
    messages: list[dict[str, Any]] = answer.json()["data"]
    return messages


async def test_a_second_browser_sees_a_new_ticket_arrive_live(console, browser):
    watcher = await browser.new_context(viewport={"width": 390, "height": 844})  # a phone
    watcher.set_default_timeout(WAIT_MS)
    try:
        page = await signed_in_as(watcher, console, "Aiko Tanaka")
        await expect(page.locator(".ticket-item")).to_have_count(20)
        await expect(page.locator("#live")).to_have_text("Live")
        subject = f"Invoices page shows an error ({uuid.uuid4().hex[:6]})"
        opened = await console.api("POST", "/v1/tickets", "Mail and portal intake", json={
            "subject": subject, "body": "Since this morning.", "priority": "high",
            "source": "email", "requester": {"email": "wei.chen@parcelpoint.example"}})
        assert opened.status_code == 201, opened.text
        arrived = page.locator(".ticket-item").first
        await expect(arrived.locator("h2")).to_have_text(subject)
        await expect(arrived.locator(".badge.new")).to_have_text("New")
        # A change to it shows in place.
        changed = await console.api("POST", f"/v1/tickets/{opened.json()['id']}/priority",
                                    "Aiko Tanaka", json={"priority": "urgent"})
        assert changed.status_code == 200, changed.text
        await expect(arrived.locator(".badge.priority-urgent")).to_have_text("Urgent")
        # The queue and a ticket fit a phone's width (as at 200% zoom on a laptop): no
        # sideways scrolling.
        assert await page.evaluate("document.documentElement.scrollWidth") <= 390
        await arrived.get_by_role("link").click()
        await expect(page.get_by_role("heading", level=1)).to_have_text(subject)
        await expect(page.locator(".clock")).to_have_count(3)
        assert await page.evaluate("document.documentElement.scrollWidth") <= 390
        no_script_errors(page)
    finally:
        await watcher.close()


async def test_a_gap_in_the_feed_is_said_and_the_queue_reloaded(console, context):
    """The feed drops while more events than the replay window happen; on reconnecting
    the server answers a gap, and the queue says so and shows the desk as it is."""
    sockets: list[Any] = []
    down = False

    async def through(ws: Any) -> None:
        if down:  # the server is out of reach: the page keeps trying, with backoff
            await ws.close(code=1011, reason="test: still down")
            return
        ws.connect_to_server()
        sockets.append(ws)

    await context.route_web_socket(re.compile(r".*/v1/stream$"), through)
    page = await signed_in(context, console, console.key("Jonas Weber"))
    await expect(page.locator(".ticket-item")).to_have_count(20)
    await expect(page.locator("#live")).to_have_text("Live")
    down = True
    await sockets[-1].close(code=1011, reason="test: dropped")
    subject = f"Missed while the feed was down ({uuid.uuid4().hex[:6]})"
    opened = await console.api("POST", "/v1/tickets", "Mail and portal intake", json={
        "subject": subject, "body": "x", "requester": {"email": "kenji@mailbox.example"}})
    assert opened.status_code == 201, opened.text
    for tag in ("missed", "gap"):  # more events than the window holds
        r = await console.api("POST", f"/v1/tickets/{opened.json()['id']}/tags", "Jonas Weber",
                              json={"add": [tag]})
        assert r.status_code == 200, r.text
    await expect(page.locator("#live")).to_have_text("Reconnecting…")
    down = False  # the next attempt resumes from the last seq it saw: too far back
    await expect(page.locator(".live-note")).to_contain_text(
        "The live feed fell behind and missed some changes")
    await expect(page.locator(".ticket-item").first.locator("h2")).to_have_text(subject)
    await expect(page.locator("#live")).to_have_text("Live")
    assert len(sockets) == 2
    no_script_errors(page)


async def test_a_change_on_a_ticket_someone_else_changed_is_refused_and_shown(console, context):
    # This page never hears of the other change: its live feed is cut off.
    await context.route_web_socket(re.compile(r".*/v1/stream$"), lambda ws: None)
    page = await signed_in(context, console, console.key("Sofia Alvarez"))
    listed = (await console.api("GET", "/v1/tickets", "Sofia Alvarez", params={
        "state": "open", "limit": 1})).json()["data"]
    ticket = listed[0]
    await page.goto(f"{console.base}/console/#/tickets/{ticket['id']}")
    await expect(page.get_by_role("heading", level=1)).to_have_text(ticket["subject"])
    await expect(page.locator(".ticket-details .version")).to_contain_text(
        f"version {ticket['version']}")
    moved = await console.api("POST", f"/v1/tickets/{ticket['id']}/state", "Lucas Moreau",
                              json={"state": "pending"})
    assert moved.status_code == 200, moved.text
    await page.get_by_label("Priority", exact=True).select_option("low")
    await page.get_by_role("button", name="Change priority").click()
    conflict = page.locator(".conflict")
    await expect(conflict.get_by_role("heading")).to_have_text("Someone else changed this ticket")
    await expect(conflict).to_contain_text("State: Open \u2192 Pending")
    await expect(page.locator(".meta .badge").first).to_have_text("Pending")
    now = (await console.api("GET", f"/v1/tickets/{ticket['id']}", "Sofia Alvarez")).json()
    assert now["priority"] == ticket["priority"]  # the refused change was not made
    await expect(page.get_by_label("Priority", exact=True)).to_have_value(ticket["priority"])


async def rate_twice(console: Console) -> dict[str, Any]:
    """The newest solved ticket, rated bad and then good with a comment (through two
    single-use links, as its requester would): the latest rating is what counts."""
    solved = (await console.api("GET", "/v1/tickets", "Jonas Weber", params={
        "state": "solved", "limit": 100})).json()["data"]
    ticket = max(solved, key=lambda t: t["created_at"])
    async with httpx.AsyncClient(base_url=console.base) as http:
        for body in ({"rating": "bad"}, {"rating": "good", "comment": "Quick and kind"}):
            link = await console.api("POST", f"/v1/tickets/{ticket['id']}/satisfaction-link",
                                     "Jonas Weber")
            assert link.status_code == 201, link.text
            rated = await http.post(f"/v1/ratings/{link.json()['token']}", json=body)
            assert rated.status_code == 200, rated.text
    return ticket


async def test_an_analyst_sees_the_charts_and_cannot_open_a_ticket(console, context, shots):
    rated = await rate_twice(console)

    async def caught_up() -> bool:
        answer = await console.api("GET", "/v1/analytics/volume", "Support analytics")
        return answer.status_code == 200 and answer.json()["lag"] == 0
    await until(caught_up, timeout=60, interval=0.2, what="the analytics projection")

    page = await signed_in(context, console, console.key("Support analytics"))
    await expect(page).to_have_url(re.compile(r"#/analytics$"))
    nav = page.get_by_role("navigation", name="Sections")
    await expect(nav.get_by_role("link")).to_have_text(["Analytics"])
    charts = page.locator("figure.chart")
    await expect(charts).to_have_count(6)
    await expect(charts.locator("figcaption")).to_have_text([
        "Time to first reply (p50 and p90)", "Resolution time (p50 and p90)",
        "Volume per day", "Tickets opened and solved by group", "Backlog by state and age",
        "SLA achievement per priority"])
    for i in range(6):
        await expect(charts.nth(i).locator("svg circle, svg rect").first).to_be_visible()
    await expect(page.locator(".freshness-words").first).to_have_text(
        re.compile(r"^(Up to date|\d+ recent changes? not counted yet)$"))
    await expect(page.locator(".freshness-details").first).to_contain_text(
        re.compile(r"As of seq \d+, lag \d+ events?"))
    assert await page.locator(".freshness").count() == 7  # each view says its freshness
    await page.screenshot(path=str(shots / "analytics.png"), full_page=True)
    # The split names groups and organizations, which an analyst may not list: the
    # analytics answer carries their names.
    window = {"from": await page.get_by_label("From (UTC day)").input_value(),
              "to": await page.get_by_label("To (UTC day)").input_value()}
    # Satisfaction: the score and response rate of the range, as the summary has them
    # (the rated ticket among them), in total and by the split.
    assert window["from"] <= rated["created_at"][:10]
    total = (await console.api("GET", "/v1/analytics/summary", "Support analytics",
                               params=window)).json()["total"]["satisfaction"]
    assert total["rated"] >= 1 and total["good"] >= 1
    tiles = page.locator(".tiles")
    for name, share in (("Satisfaction score", total["score"]),
                        ("Response rate", total["response_rate"])):
        await expect(tiles.locator(".tile", has=page.locator("dt", has_text=name))
                     .locator("dd")).to_have_text(f"{round(share * 100)}%")
    by_group = (await console.api("GET", "/v1/analytics/summary", "Support analytics",
                                  params={"group_by": "group", **window})).json()
    table = page.get_by_role("table", name=re.compile("^Satisfaction by group"))
    await expect(table.locator("tbody tr")).to_have_count(len(by_group["groups"]))
    assert sum(int(n) for n in await table.locator("tbody td:nth-child(3)")
               .all_text_contents()) == sum(g["satisfaction"]["rated"]
                                            for g in by_group["groups"])
    split = charts.nth(3)
    by_group = (await console.api("GET", "/v1/analytics/summary", "Support analytics",
                                  params={"group_by": "group", **window})).json()
    assert "Technical" in {g["name"] for g in by_group["groups"]}
    await expect(split.locator(".axis.x text", has_text="Technical")).to_have_count(1)
    assert sorted(await split.locator("tbody th").all_text_contents()) == sorted(
        g["name"] or "No group" for g in by_group["groups"])
    # The split follows the selector: by organization, one bar pair per organization.
    by_org = (await console.api("GET", "/v1/analytics/summary", "Support analytics", params={
        "group_by": "organization", **window})).json()
    await page.get_by_label("Split by").select_option("organization")
    await expect(page).to_have_url(re.compile(r"&by=organization$"))
    await expect(split.locator("figcaption")).to_have_text(
        "Tickets opened and solved by organization")
    await expect(split.locator("tbody tr")).to_have_count(len(by_org["groups"]))
    assert sorted(await split.locator("tbody th").all_text_contents()) == sorted(
        g["name"] or "No organization" for g in by_org["groups"])
    assert "Kestrel Logistics" in await split.locator("tbody th").all_text_contents()

    ticket_id = (await console.api("GET", "/v1/tickets", "Jonas Weber",
                                   params={"limit": 1})).json()["data"][0]["id"]
    await page.goto(f"{console.base}/console/#/tickets/{ticket_id}")
    await expect(page.get_by_role("alert")).to_contain_text("Your role (analyst) may not use this")
    await expect(page.locator(".message, .ticket-grid")).to_have_count(0)
    no_script_errors(page)
    # The console hides it, and the API refuses it all the same.
    status = await page.evaluate(
        """async ([id, key]) => (await fetch(`/v1/tickets/${id}`,
             {headers: {Authorization: `Bearer ${key}`}})).status""",
        [ticket_id, console.key("Support analytics")])
    assert status == 403

    # An agent sees the rating on the ticket page: the latest (good), its comment, when.
    agent_page = await signed_in(context, console, console.key("Jonas Weber"))
    await agent_page.goto(f"{console.base}/console/#/tickets/{rated['id']}")
    box = agent_page.get_by_role("region", name="Satisfaction")
    await expect(box.locator(".badge")).to_have_text("Good")
    await expect(box.locator(".rating-comment")).to_have_text("Quick and kind")
    await expect(box.locator(".rated-at")).to_contain_text("rated ")
    await expect(box.locator(".rated-at")).to_contain_text("via link")
    no_script_errors(agent_page)


async def test_an_auditor_verifies_the_chain_and_sees_where_it_breaks(console, context):
    page = await signed_in(context, console, console.key("Compliance audit"))
    await expect(page).to_have_url(re.compile(r"#/audit$"))
    verify = page.get_by_role("button", name="Verify the chain")
    await verify.click()
    verdict = page.locator(".verdict")
    await expect(verdict).to_contain_text("The chain is intact")
    head = int(re.search(r"seq 1 to (\d+)", await verdict.inner_text()).group(1))
    assert head > 300
    await expect(page.locator(".export pre").first).to_contain_text(
        f"helpdesk audit export --tenant {console.rich.tenant_id}")

    # An auditor reads a ticket's history (not its conversation) by the ticket's id.
    tickets = page.locator('.events a[href^="#/tickets/"]')
    first_ticket = await tickets.first.get_attribute("href")
    await tickets.first.click()
    await expect(page).to_have_url(re.compile(re.escape(first_ticket) + "$"))
    history = page.locator(".history tbody tr")
    await expect(history.first).to_contain_text("TicketOpened")
    await expect(page.locator(".conversation")).to_contain_text("may not read the conversation")

    # A superuser edits an event behind the service's back: the chain names its seq.
    seq = head // 2
    restore = await _tamper(console.db, console.rich, seq)
    try:
        await page.get_by_role("link", name="Audit", exact=True).click()
        await page.get_by_role("button", name="Verify the chain").click()
        await expect(verdict).to_contain_text(f"The chain is broken at seq {seq}.")
    finally:
        await restore()
    await page.get_by_role("button", name="Verify the chain").click()
    await expect(verdict).to_contain_text("The chain is intact")

    # An auditor reads a contact but may not change it: no edit form.
    contact = (await console.api("GET", "/v1/contacts", "Compliance audit",
                                 params={"limit": 1})).json()["data"][0]
    await page.goto(f"{console.base}/console/#/contacts/{contact['id']}")
    await expect(page.locator(".about")).to_contain_text(contact["email"])
    await expect(page.get_by_role("form", name="Edit the contact")).to_have_count(0)
    no_script_errors(page)


async def _tamper(db: pg.TestDatabase, tenant: DemoTenant, seq: int) -> Any:
    conn = await asyncpg.connect(db.admin_url)
    try:
        # A superuser can switch the immutability triggers off; the chain still knows.
        await conn.execute("SET session_replication_role = replica")
        old = await conn.fetchval("SELECT data FROM events WHERE tenant_id = $1 AND seq = $2",
                                  tenant.tenant_id, seq)
        await conn.execute("UPDATE events SET data = data || '{\"edited\": true}'::jsonb "
                           "WHERE tenant_id = $1 AND seq = $2", tenant.tenant_id, seq)
    finally:
        await conn.close()

    async def restore() -> None:
        conn = await asyncpg.connect(db.admin_url)
        try:
            await conn.execute("SET session_replication_role = replica")
            await conn.execute("UPDATE events SET data = $3::text::jsonb "
                               "WHERE tenant_id = $1 AND seq = $2", tenant.tenant_id, seq, old)
        finally:
            await conn.close()

    return restore


async def _agent_id(console: Console, who: str) -> str:
    me = (await console.api("GET", "/v1/auth/me", who)).json()
    return str(me["agent"]["id"])


async def _named(console: Console, path: str, name: str) -> dict[str, Any]:
    rows = (await console.api("GET", path, "Priya Raman", params={"limit": 100})).json()["data"]
    return next(r for r in rows if r["name"] == name)


async def test_the_queue_filters_by_group_organization_and_requester(console, context):
    page = await signed_in_as(context, console, "Jonas Weber")
    items = page.locator(".ticket-item")
    await expect(items).to_have_count(20)
    technical = await _named(console, "/v1/groups", "Technical")
    await page.get_by_label("Group", exact=True).select_option(label="Technical")
    await expect(page).to_have_url(re.compile(rf"#/queue\?group_id={technical['id']}$"))
    listed = (await console.api("GET", "/v1/tickets", "Jonas Weber", params={
        "group_id": technical["id"], "limit": 20})).json()["data"]
    assert listed
    await expect(items.locator("h2")).to_have_text([t["subject"] for t in listed])
    await expect(items.first.locator(".group")).to_have_text("Technical")

    kestrel = await _named(console, "/v1/organizations", "Kestrel Logistics")
    await page.get_by_label("Group", exact=True).select_option(label="Any group")
    await page.get_by_label("Organization", exact=True).select_option(label="Kestrel Logistics")
    await expect(page).to_have_url(re.compile(rf"organization_id={kestrel['id']}$"))
    of_kestrel = (await console.api("GET", "/v1/tickets", "Jonas Weber", params={
        "organization_id": kestrel["id"], "limit": 20})).json()["data"]
    assert of_kestrel
    await expect(items.locator("h2")).to_have_text([t["subject"] for t in of_kestrel])

    # The requester filter comes from a contact's page, and can be removed.
    contact_id = of_kestrel[0]["requester"]["contact_id"]
    await page.goto(f"{console.base}/console/#/queue?requester_id={contact_id}")
    theirs = (await console.api("GET", "/v1/tickets", "Jonas Weber", params={
        "requester_id": contact_id, "limit": 20})).json()["data"]
    await expect(items.locator("h2")).to_have_text([t["subject"] for t in theirs])
    await page.get_by_role("button", name="Remove the requester filter").click()
    await expect(items).to_have_count(20)
    await expect(page).to_have_url(re.compile(r"#/queue$"))
    no_script_errors(page)


async def test_a_contact_and_an_organization_show_their_tickets(console, context):
    page = await signed_in_as(context, console, "Aiko Tanaka")
    kestrel = await _named(console, "/v1/organizations", "Kestrel Logistics")
    contact = (await console.api("GET", "/v1/contacts", "Aiko Tanaka", params={
        "organization_id": kestrel["id"], "limit": 1})).json()["data"][0]
    await page.get_by_role("navigation", name="Sections").get_by_role(
        "link", name="Contacts").click()
    # The queue (whose source filter has an "E-mail" box) is gone once this shows.
    await expect(page.get_by_role("heading", level=1)).to_have_text("Contacts")
    await page.get_by_label("E-mail", exact=True).fill(contact["email"].upper())
    await page.get_by_role("button", name="Find").click()
    found = page.locator(".contact-item")
    await expect(found).to_have_count(1)
    await found.get_by_role("link").click()
    await expect(page).to_have_url(re.compile(rf"#/contacts/{contact['id']}$"))
    await expect(page.get_by_role("heading", level=1)).to_have_text(
        contact["name"] or contact["email"])
    theirs = (await console.api("GET", f"/v1/contacts/{contact['id']}/tickets",
                                "Aiko Tanaka")).json()["data"]
    assert theirs
    await expect(page.locator(".ticket-item h2")).to_have_text([t["subject"] for t in theirs])

    # From a ticket, the requester links back to the contact.
    await page.get_by_role("link", name=theirs[0]["subject"]).first.click()
    await expect(page.get_by_role("heading", level=1)).to_have_text(theirs[0]["subject"])
    await page.locator("a.requester").click()
    await expect(page).to_have_url(re.compile(rf"#/contacts/{contact['id']}$"))

    await page.get_by_role("link", name="Kestrel Logistics").click()
    await expect(page.get_by_role("heading", level=1)).to_have_text("Kestrel Logistics")
    of_org = (await console.api("GET", f"/v1/organizations/{kestrel['id']}/tickets",
                                "Aiko Tanaka", params={"limit": 20})).json()["data"]
    await expect(page.locator(".ticket-main .ticket-item h2")).to_have_text(
        [t["subject"] for t in of_org])
    await expect(page.locator(".contact-item", has_text=contact["email"])).to_have_count(1)
    no_script_errors(page)


async def test_field_values_are_edited_and_a_solve_names_the_missing_field(console, context):
    defined = await console.api("POST", "/v1/ticket-fields", "Priya Raman", json={
        "key": "order_no", "title": "Order number", "type": "text", "required_on": "solve"})
    assert defined.status_code == 201, defined.text
    try:
        page = await signed_in_as(context, console, "Lucas Moreau")
        pending = (await console.api("GET", "/v1/tickets", "Lucas Moreau", params={
            "state": "pending", "limit": 20})).json()["data"]
        # One of the demo's (a ticket an earlier test opened has no field values).
        ticket = next(t for t in pending if "category" in t["fields"])
        await page.goto(f"{console.base}/console/#/tickets/{ticket['id']}")
        await expect(page.get_by_role("heading", level=1)).to_have_text(ticket["subject"])
        fields = page.get_by_role("form", name="Ticket fields")
        await expect(fields.get_by_label("Category")).to_have_value(ticket["fields"]["category"])

        # Solving needs the order number: the refusal names the field by its title.
        await page.get_by_label("State", exact=True).select_option("solved")
        await page.get_by_role("button", name="Change state").click()
        alert = page.locator(".problems [role=alert]")
        await expect(alert).to_contain_text("Fill in first: Order number.")
        await expect(fields.get_by_label("Order number")).to_have_attribute(
            "aria-invalid", "true")

        await fields.get_by_label("Category").select_option(label="Billing")
        await fields.get_by_label("Order number").fill("KL-20931")
        await fields.get_by_role("button", name="Save fields").click()
        await expect(page.locator(".ticket-details .version")).to_contain_text(
            f"version {ticket['version'] + 1}")
        now = (await console.api("GET", f"/v1/tickets/{ticket['id']}", "Lucas Moreau")).json()
        assert now["fields"]["category"] == "billing"
        assert now["fields"]["order_no"] == "KL-20931"
        await page.get_by_label("State", exact=True).select_option("solved")
        await page.get_by_role("button", name="Change state").click()
        await expect(page.locator(".meta .badge").first).to_have_text("Solved")
        refusals_asked_for(page, 422)
        no_script_errors(page)
    finally:
        gone = await console.api("PATCH", "/v1/ticket-fields/order_no", "Priya Raman",
                                 json={"active": False})
        assert gone.status_code == 200, gone.text


async def test_a_group_the_assignee_is_no_member_of_is_refused_and_said(console, context):
    jonas = await _agent_id(console, "Jonas Weber")
    ticket = (await console.api("GET", "/v1/tickets", "Jonas Weber", params={
        "assignee": jonas, "state": "open", "limit": 1})).json()["data"][0]
    page = await signed_in_as(context, console, "Jonas Weber")
    await page.goto(f"{console.base}/console/#/tickets/{ticket['id']}")
    await expect(page.get_by_role("heading", level=1)).to_have_text(ticket["subject"])
    form = page.get_by_role("form", name="Assign the ticket")
    # The groups are read: "No group" and the demo's three.
    await expect(form.get_by_label("Group").locator("option")).to_have_count(4)
    await form.get_by_label("Group").select_option(label="Billing")
    await form.get_by_role("button", name="Assign").click()
    alert = page.locator(".problems [role=alert]")
    await expect(alert).to_contain_text("409 not_group_member")
    await expect(alert).to_contain_text("The change was not made")
    after = (await console.api("GET", f"/v1/tickets/{ticket['id']}", "Jonas Weber")).json()
    assert (after["group_id"], after["version"]) == (ticket["group_id"], ticket["version"])

    # Handed to a member of the group, the same change is made.
    await form.get_by_label("Assignee").select_option(label="Lucas Moreau")
    await form.get_by_role("button", name="Assign").click()
    await expect(alert).to_have_count(0)
    await expect(form.get_by_label("Group")).to_have_value(
        (await _named(console, "/v1/groups", "Billing"))["id"])
    after = (await console.api("GET", f"/v1/tickets/{ticket['id']}", "Jonas Weber")).json()
    assert after["assignee"] == await _agent_id(console, "Lucas Moreau")
    refusals_asked_for(page, 409)
    no_script_errors(page)


# A phone, and a 1280 x 900 laptop at 200% zoom: 640 CSS pixels across, two device
# pixels each (the narrow layout is the same; text and controls are drawn at twice the
# size).
NARROW = {
    "phone": {"viewport": {"width": 375, "height": 812}},
    "zoom_200": {"viewport": {"width": 640, "height": 450}, "device_scale_factor": 2},
}


async def _tab_to(page: Page, control: Any, limit: int = 120) -> None:
    """Press Tab until ``control`` has the focus (it is reachable by keyboard), and
    check the focus is drawn."""
    for _ in range(limit):
        await page.keyboard.press("Tab")
        if await control.evaluate("el => el === document.activeElement"):
            break
    else:
        raise AssertionError(f"Tab never reached {control}")
    outline = await control.evaluate(
        "el => { const s = getComputedStyle(el); return [s.outlineStyle, s.outlineWidth]; }")
    assert outline[0] != "none" and float(outline[1].removesuffix("px")) >= 2, outline


async def _fits(page: Page, width: int, *controls: Any) -> None:
    """No sideways scrolling, and each control is in view horizontally, visible and
    reached by keyboard from the page's heading with a visible focus."""
    assert await page.evaluate("document.documentElement.scrollWidth") <= width
    await page.get_by_role("heading", level=1).focus()
    for control in controls:
        await expect(control).to_be_visible()
        box = await control.bounding_box()
        assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= width, box
        await _tab_to(page, control)


@pytest.mark.parametrize("screen", list(NARROW))
async def test_the_newer_screens_fit_a_phone_and_200_percent_zoom(console, browser, screen):
    ctx = await browser.new_context(**NARROW[screen])
    ctx.set_default_timeout(WAIT_MS)
    width = NARROW[screen]["viewport"]["width"]
    try:
        page = await signed_in_as(ctx, console, "Priya Raman")
        kestrel = await _named(console, "/v1/organizations", "Kestrel Logistics")
        contact = (await console.api("GET", "/v1/contacts", "Priya Raman", params={
            "organization_id": kestrel["id"], "limit": 1})).json()["data"][0]

        await page.goto(f"{console.base}/console/#/contacts")
        await expect(page.locator(".contact-item").first).to_be_visible()
        await _fits(page, width, page.get_by_label("E-mail", exact=True),
                    page.get_by_role("button", name="Find"),
                    page.get_by_role("button", name="All contacts"))

        await page.goto(f"{console.base}/console/#/contacts/{contact['id']}")
        edit = page.get_by_role("form", name="Edit the contact")
        await expect(page.locator(".ticket-item").first).to_be_visible()
        await _fits(page, width, *[edit.get_by_label(name, exact=True) for name in (
            "Name", "Phone", "Tags", "Organization")], edit.get_by_role("button", name="Save"))

        await page.goto(f"{console.base}/console/#/organizations/{kestrel['id']}")
        edit = page.get_by_role("form", name="Edit the organization")
        await expect(page.locator(".ticket-main .ticket-item").first).to_be_visible()
        await _fits(page, width, edit.get_by_label("Name", exact=True),
                    edit.get_by_label("Domains", exact=True),
                    edit.get_by_role("radio", name=re.compile(r"^stay")))
        # Within the choice, the arrow keys move (Tab goes on to the next control).
        await page.keyboard.press("ArrowDown")
        await expect(edit.get_by_role("radio", name=re.compile(r"^move:"))).to_be_focused()
        await _tab_to(page, edit.get_by_role("button", name="Save"))

        # A ticket: the assign form (group and agent) and the field editor.
        ticket = next(t for t in (await console.api("GET", "/v1/tickets", "Priya Raman", params={
            "state": "open", "limit": 50})).json()["data"] if "category" in t["fields"])
        await page.goto(f"{console.base}/console/#/tickets/{ticket['id']}")
        assign = page.get_by_role("form", name="Assign the ticket")
        fields = page.get_by_role("form", name="Ticket fields")
        await expect(assign.get_by_label("Group").locator("option")).to_have_count(4)
        await expect(fields.get_by_label("Category")).to_have_value(ticket["fields"]["category"])
        await _fits(page, width, assign.get_by_label("Group"), assign.get_by_label("Assignee"),
                    assign.get_by_role("button", name="Assign"),
                    fields.get_by_label("Category"),
                    fields.get_by_role("button", name="Save fields"))
        no_script_errors(page)
    finally:
        await ctx.close()


async def test_a_contact_is_edited_and_refusals_are_shown(console, context):
    kestrel = await _named(console, "/v1/organizations", "Kestrel Logistics")
    contact = (await console.api("GET", "/v1/contacts", "Aiko Tanaka", params={
        "organization_id": kestrel["id"], "limit": 1})).json()["data"][0]
    page = await signed_in_as(context, console, "Aiko Tanaka")
    await page.goto(f"{console.base}/console/#/contacts/{contact['id']}")
    edit = page.get_by_role("form", name="Edit the contact")
    await expect(edit.get_by_label("Name", exact=True)).to_have_value(contact["name"] or "")
    alert = edit.locator(".problems [role=alert]")

    # A tag that is no slug: 422, its title and detail, the input marked.
    await edit.get_by_label("Tags", exact=True).fill("vip, n/a")
    await edit.get_by_role("button", name="Save").click()
    await expect(alert).to_contain_text("The change was not made")
    await expect(alert).to_contain_text("422")
    await expect(alert.locator(".problem-detail")).to_contain_text("'n/a' is not a valid tag")
    await expect(edit.get_by_label("Tags", exact=True)).to_have_attribute("aria-invalid", "true")

    # Someone else renames the contact meanwhile: 412, and the page shows the new name
    # while keeping what was typed here.
    renamed = f"{contact['name'] or 'Someone'} ({uuid.uuid4().hex[:4]})"
    other = await console.api("PATCH", f"/v1/contacts/{contact['id']}", "Jonas Weber",
                              json={"name": renamed},
                              headers={"If-Match": f'"{contact["version"]}"'})
    assert other.status_code == 200, other.text
    await edit.get_by_label("Tags", exact=True).fill("vip, renewal")
    await edit.get_by_label("Phone", exact=True).fill("+49 30 5550 1234")
    await edit.get_by_role("button", name="Save").click()
    await expect(alert).to_contain_text("412")
    await expect(alert).to_contain_text("Someone else changed it")
    await expect(page.get_by_role("heading", level=1)).to_have_text(renamed)
    await expect(edit.get_by_label("Name", exact=True)).to_have_value(renamed)
    await expect(edit.get_by_label("Tags", exact=True)).to_have_value("vip, renewal")

    # Saved again, on the version it now has: only what was typed here changes.
    await edit.get_by_role("button", name="Save").click()
    await expect(edit.locator(".saved")).to_have_text(
        f"Saved: the contact is at version {contact['version'] + 2}.")
    await expect(alert).to_have_count(0)
    now = (await console.api("GET", f"/v1/contacts/{contact['id']}", "Aiko Tanaka")).json()
    assert (now["name"], now["phone"], now["tags"]) == (renamed, "+49 30 5550 1234",
                                                         ["renewal", "vip"])
    await expect(page.locator(".about")).to_contain_text("renewal, vip")

    # An agent may not change organizations: no form there.
    await page.get_by_role("link", name="Kestrel Logistics").first.click()
    await expect(page.get_by_role("heading", level=1)).to_have_text("Kestrel Logistics")
    await expect(page.locator(".ticket-main .ticket-item").first).to_be_visible()
    await expect(page.get_by_role("form", name="Edit the organization")).to_have_count(0)
    refusals_asked_for(page, 422)
    refusals_asked_for(page, 412)
    no_script_errors(page)


async def test_an_admin_edits_an_organization_and_a_taken_domain_is_refused(console, context):
    organizations = (await console.api("GET", "/v1/organizations", "Priya Raman", params={
        "limit": 100})).json()["data"]
    kestrel = next(o for o in organizations if o["name"] == "Kestrel Logistics")
    other = next(o for o in organizations if o["id"] != kestrel["id"] and o["domains"])
    page = await signed_in_as(context, console, "Priya Raman")
    await page.goto(f"{console.base}/console/#/organizations/{kestrel['id']}")
    edit = page.get_by_role("form", name="Edit the organization")
    domains = edit.get_by_label("Domains", exact=True)
    await expect(domains).to_have_value(", ".join(kestrel["domains"]))
    # The choice is explicit, and starts at leaving existing contacts where they are.
    await expect(edit.get_by_role("radio", name=re.compile(r"^stay"))).to_be_checked()

    await domains.fill(", ".join([*kestrel["domains"], other["domains"][0]]))
    await edit.get_by_role("button", name="Save").click()
    alert = edit.locator(".problems [role=alert]")
    await expect(alert).to_contain_text("409 domain_taken")
    await expect(alert.locator(".problem-detail")).to_contain_text(other["domains"][0])
    after = (await console.api("GET", f"/v1/organizations/{kestrel['id']}",
                               "Priya Raman")).json()
    assert (after["domains"], after["version"]) == (kestrel["domains"], kestrel["version"])

    await domains.fill(", ".join(kestrel["domains"]))
    await edit.get_by_label("Name", exact=True).fill("Kestrel Logistics GmbH")
    await edit.get_by_role("button", name="Save").click()
    await expect(page.get_by_role("heading", level=1)).to_have_text("Kestrel Logistics GmbH")
    await expect(edit.locator(".saved")).to_contain_text("0 contacts moved")
    restored = await console.api("PATCH", f"/v1/organizations/{kestrel['id']}", "Priya Raman",
                                 json={"name": "Kestrel Logistics"})
    assert restored.status_code == 200, restored.text
    refusals_asked_for(page, 409)
    no_script_errors(page)


async def test_an_agent_applies_a_macro_and_a_shared_view_shows_in_the_queue(console, context):
    admin = "Priya Raman"
    made = await console.api("POST", "/v1/macros", admin, json={
        "name": "Escalate to urgent", "shared": True,
        "text": "Thanks {{requester.name}}, {{agent.name}} has raised this to urgent.",
        "actions": [{"type": "set_priority", "value": "urgent"},
                    {"type": "add_tags", "value": ["escalated"]}]})
    assert made.status_code == 201, made.text
    canned = await console.api("POST", "/v1/macros", admin, json={
        "name": "Thanks for waiting", "shared": True, "text": "Thanks for waiting, "
                                                             "{{requester.name}}!"})
    assert canned.status_code == 201, canned.text
    view = await console.api("POST", "/v1/views", admin, json={
        "name": "Urgent and escalated", "shared": True,
        "filters": {"priority": ["urgent"], "tag": "escalated"}})
    assert view.status_code == 201, view.text
    ticket = next(t for t in (await console.api("GET", "/v1/tickets", "Jonas Weber", params={
        "state": "open", "priority": "low", "limit": 100})).json()["data"])

    page = await signed_in_as(context, console, "Jonas Weber")
    views = page.get_by_role("navigation", name="Saved views")
    await expect(views.get_by_role("link", name="Urgent and escalated")).to_be_visible()
    await page.goto(f"{console.base}/console/#/tickets/{ticket['id']}")
    await expect(page.get_by_role("heading", level=1)).to_have_text(ticket["subject"])
    macros = page.get_by_role("form", name="Apply a macro")
    await macros.get_by_label("Macro", exact=True).select_option(label="Escalate to urgent")
    await macros.get_by_role("button", name="Preview").click()
    await expect(macros.locator(".macro-preview")).to_contain_text("Would append 3 event(s)")
    await expect(macros.locator(".macro-preview")).to_contain_text("Jonas Weber has raised")
    unchanged = (await console.api("GET", f"/v1/tickets/{ticket['id']}", "Jonas Weber")).json()
    assert unchanged["version"] == ticket["version"]
    await macros.get_by_role("button", name="Apply macro").click()
    await expect(macros.locator(".macro-preview")).to_contain_text("Applied: 3 event(s)")
    await expect(page.locator(".meta .badge.priority-urgent")).to_be_visible()
    after = (await console.api("GET", f"/v1/tickets/{ticket['id']}", "Jonas Weber")).json()
    assert after["priority"] == "urgent" and "escalated" in after["tags"]
    assert after["version"] == ticket["version"] + 3
    await expect(page.locator(".message", has_text="has raised this to urgent")).to_have_count(1)

    # A canned reply, offered by name in the reply box, fills the message with its text.
    await page.get_by_label("Canned reply").fill("Thanks for waiting")
    await page.get_by_label("Canned reply").dispatch_event("change")
    await expect(page.get_by_label("Message", exact=True)).to_have_value(
        re.compile(r"^Thanks for waiting, .+!$"))

    # The shared view lists the ticket in the queue.
    await page.goto(f"{console.base}/console/#/queue")
    await page.get_by_role("navigation", name="Saved views").get_by_role(
        "link", name="Urgent and escalated").click()
    await expect(page).to_have_url(re.compile(
        r"#/queue\?(priority=urgent&tag=escalated|tag=escalated&priority=urgent)$"))
    await expect(page.locator(".ticket-item", has_text=ticket["subject"]).first).to_be_visible()
    no_script_errors(page)


async def test_a_scoped_key_sees_only_what_its_scopes_allow(console, context):
    # An agent key scoped to reading tickets: the queue and a ticket's thread, and none
    # of the agent's other controls (contacts, replies, state, priority, assignee).
    jonas = (await console.api("GET", "/v1/auth/me", "Jonas Weber")).json()["agent"]["id"]
    issued = await console.api("POST", "/v1/api-keys", "Priya Raman", json={
        "name": "ticket reader", "role": "agent", "agent_id": jonas,
        "scopes": ["self:read", "ticket:list", "ticket:read", "note:read"]})
    assert issued.status_code == 201, issued.text
    page = await signed_in(context, console, issued.json()["secret"])
    await expect(page.locator("#who")).to_contain_text("agent (scoped key)")
    nav = page.get_by_role("navigation", name="Sections")
    await expect(nav.get_by_role("link")).to_have_text(["Queue"])
    await expect(page.get_by_role("button", name="New ticket")).to_have_count(0)
    await page.locator(".ticket-item").first.get_by_role("link").click()
    await expect(page.locator(".message").first).to_be_visible()
    await expect(page.locator("form.reply")).to_have_count(0)
    for form in ("Change the state", "Change the priority", "Assign to me", "Tags"):
        await expect(page.get_by_role("form", name=form)).to_have_count(0)
    await page.goto(f"{console.base}/console/#/contacts")
    await expect(page.get_by_role("alert")).to_contain_text(
        "The scopes of this key do not allow this")
    no_script_errors(page)


async def test_an_admin_signs_in_with_the_tenants_openid_connect_provider(console, context,
                                                                         shots):
    """The button appears for a tenant with a provider (tests/support/oidc.py, on
    127.0.0.1), goes there and comes back signed in, with the password's cookie."""
    who = "Priya Raman"
    email, _password = console.login(who)
    with running_provider() as provider:
        provider.login_as = email
        body = {"label": "Example ID", "issuer": provider.issuer, "client_id": CLIENT_ID,
                "client_secret": CLIENT_SECRET}
        r = await console.api("PUT", "/v1/settings/oidc", who, json=body)
        assert r.status_code == 200, r.text
        try:
            page = await _console_page(context, console)
            await page.get_by_label("Tenant", exact=True).fill(console.rich.slug)
            await page.get_by_label("Tenant", exact=True).press("Tab")
            button = page.get_by_role("link", name="Sign in with Example ID")
            await expect(button).to_be_visible()
            await page.screenshot(path=str(shots / "sign-in-oidc.png"))
            await button.click()
            await expect(page.locator("#who")).to_contain_text(who)
            assert "signed_in" not in page.url
            cookie = {c["name"]: c for c in await context.cookies()}["hd_refresh"]
            assert cookie["httpOnly"] and cookie["sameSite"] == "Strict"
            kept = await page.evaluate(f"JSON.parse(sessionStorage.getItem('{STORED}'))")
            assert kept["kind"] == "access_token"
            no_script_errors(page)
        finally:
            r = await console.api("DELETE", "/v1/settings/oidc", who)
            assert r.status_code == 200, r.text
