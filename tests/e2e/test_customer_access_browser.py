"""The customer pages' accessibility in headless Chromium, on the desk of
``tests/e2e/test_customer_browser.py``: the portal and the widget used with the
keyboard alone (Tab to each control, type, Enter or Space, from signing in to rating a
solved ticket); a label on every control of every view; and no sideways scrolling at
a phone's width (375 CSS px) or at 200 % zoom (a 1280 px window: 640 CSS px at two
device pixels per CSS pixel), with long unbroken words in the content.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import httpx
import pytest
from playwright.async_api import Browser, BrowserContext, Page, expect

from tests.e2e.test_customer_browser import (
    PASSWORD,
    WAIT_MS,
    ClosedShadow,
    Desk,
    _watched,
    context,
    desk,
)
from tests.support.wait import until

__all__ = ["context", "desk"]

pytestmark = [pytest.mark.slow, pytest.mark.timeout(180)]

LONG = "Supercalifragilisticexpialidocious" * 4  # one word, far wider than a phone
SIZES = [pytest.param({"width": 375, "height": 740}, id="phone-375"),
         pytest.param({"width": 640, "height": 450}, id="zoom-200")]

UNLABELLED = """(root) => [...root.querySelectorAll('input, select, textarea, button')]
    .filter((el) => el.type !== 'hidden' && el.checkVisibility())
    .filter((el) => {
      const named = (el.labels && [...el.labels].some((l) => l.textContent.trim()))
        || (el.getAttribute('aria-label') || '').trim()
        || (el.tagName === 'BUTTON' && el.textContent.trim());
      return !named;
    })
    .map((el) => el.outerHTML.slice(0, 120))"""
"""The visible controls under ``root`` with no accessible name of their own: a
non-empty ``<label>``, an ``aria-label``, or a button's text."""

OVERFLOW = """(root) => {
    const width = document.documentElement.clientWidth;
    const wide = [...root.querySelectorAll('*')].filter((el) => {
      const r = el.getBoundingClientRect();
      return el.checkVisibility() && r.width > 0 && (r.right > width + 0.5 || r.left < -0.5);
    }).map((el) => `${el.tagName}.${el.className}`);
    return {scroll: document.documentElement.scrollWidth, width, wide};
}"""
"""Whether the page scrolls sideways, and which visible elements under ``root`` reach
outside the viewport."""


async def _tab_to(step: Callable[[], Awaitable[None]], at: Callable[[], Awaitable[Any]],
                  what: str, limit: int = 30) -> None:
    """Press Tab (``step``) until ``at()`` holds: the control is reached by keyboard."""
    for _ in range(limit):
        await step()
        if await at():
            return
    raise AssertionError(f"{what} not reached with {limit} presses of Tab")


async def _portal_tab_to(page: Page, test: str, what: str, back: bool = False) -> None:
    async def at() -> Any:
        return await page.evaluate(f"(() => {{ const el = document.activeElement; "
                                   f"return {test}; }})()")

    await _tab_to(lambda: page.keyboard.press("Shift+Tab" if back else "Tab"), at, what)


async def _widget_tab_to(page: Page, widget: ClosedShadow, test: str, what: str,
                         back: bool = False) -> None:
    async def at() -> Any:
        return await widget.run(f"function() {{ const el = this.activeElement; "
                                f"return !!el && ({test}); }}")

    await _tab_to(lambda: page.keyboard.press("Shift+Tab" if back else "Tab"), at, what)


async def _solved_ticket(desk: Desk, token: str, subject: str) -> str:
    """A ticket of the customer with an agent's reply, solved."""
    async with httpx.AsyncClient(base_url=desk.base) as client:
        made = await client.post("/v1/portal/tickets", headers={
            "Authorization": f"Bearer {token}"}, json={"subject": subject, "body": LONG})
    assert made.status_code == 201, made.text
    ticket_id = str(made.json()["id"])
    reply = await desk.api("POST", f"/v1/tickets/{ticket_id}/messages", json={
        "body": f"See https://example.com/{LONG}/{LONG}", "visibility": "public"})
    assert reply.status_code == 201, reply.text
    solved = await desk.api("POST", f"/v1/tickets/{ticket_id}/state", json={"state": "solved"})
    assert solved.status_code == 200, solved.text
    return ticket_id


async def test_the_portal_with_the_keyboard_alone(desk: Desk, context: BrowserContext) -> None:
    email = "keys@example.com"
    token = await desk.customer(email)
    solved = await _solved_ticket(desk, token, "Solved by keyboard")
    page = await context.new_page()
    errors = _watched(page)
    portal = f"{desk.base}/portal/{desk.tenant.slug}/"
    await page.goto(portal)
    await expect(page.get_by_role("heading", name="Sign in to your help centre")).to_be_visible()

    # Each page gives its heading the focus; the skip link before it moves the focus
    # to the content, on the same page.
    assert await page.evaluate("document.activeElement.id") == "page-title"
    await _portal_tab_to(page, "el.id === 'skip-link'", "the skip link", back=True)
    await page.keyboard.press("Enter")
    assert await page.evaluate("document.activeElement.id") == "main"
    await expect(page.get_by_role("heading", name="Sign in to your help centre")).to_be_visible()

    await _portal_tab_to(page, "el.id === 'sign-in-email'", "the e-mail field")
    await page.keyboard.type(email)
    await page.keyboard.press("Tab")
    await page.keyboard.type(PASSWORD)
    await page.keyboard.press("Enter")
    await expect(page.get_by_role("heading", name="My tickets")).to_be_visible()

    # A new ticket: to the link, into the form, to Send.
    await _portal_tab_to(page, "el.tagName === 'A' && el.textContent === 'New ticket'",
                         "the New ticket link")
    await page.keyboard.press("Enter")
    await expect(page.get_by_role("heading", name="Ask for help")).to_be_visible()
    await _portal_tab_to(page, "el.id === 'new-subject'", "the subject")
    await page.keyboard.type("Typed without a mouse")
    await page.keyboard.press("Tab")
    assert await page.evaluate("document.activeElement.id") == "new-body"
    await page.keyboard.type("Every key pressed.")
    await _portal_tab_to(page, "el.type === 'submit' && el.textContent === 'Send'", "Send")
    await page.keyboard.press("Enter")
    await expect(page.get_by_role("heading", name="Typed without a mouse")).to_be_visible()
    # The new page's heading has the focus: reading starts there.
    assert await page.evaluate("document.activeElement.id") == "page-title"

    # Reply, then rate the solved ticket: Space chooses, Enter sends.
    await _portal_tab_to(page, "el.id === 'reply-body'", "the reply box")
    await page.keyboard.type("And a reply.")
    await _portal_tab_to(page, "el.type === 'submit' && el.textContent === 'Send'", "Send")
    await page.keyboard.press("Enter")
    await expect(page.locator("ol.thread > li")).to_have_count(2)
    # The button was disabled while the reply went: the focus comes back to it.
    await expect(page.locator("*:focus")).to_have_text('Send')

    await page.goto(f"{portal}#/tickets/{solved}")
    await expect(page.get_by_role("heading", name="Solved by keyboard")).to_be_visible()
    await _portal_tab_to(page, "el.id === 'rating-good'", "the first rating choice")
    await page.keyboard.press("ArrowDown")  # within the group: the next choice, chosen
    assert await page.evaluate("document.activeElement.id") == "rating-bad"
    await page.keyboard.press("ArrowUp")
    assert await page.evaluate("document.getElementById('rating-good').checked")
    await page.keyboard.press("Tab")
    assert await page.evaluate("document.activeElement.id") == "rating-comment"
    await page.keyboard.type("All by keyboard.")
    await page.keyboard.press("Tab")
    assert await page.evaluate("document.activeElement.textContent") == "Send my rating"
    await page.keyboard.press("Enter")
    await expect(page.locator(".current-rating")).to_have_text(
        "Your rating: Good · All by keyboard.")
    await expect(page.locator("*:focus")).to_have_text('Send my rating')
    assert not errors, errors


async def test_the_widget_with_the_keyboard_alone(desk: Desk, context: BrowserContext) -> None:
    page = await context.new_page()
    errors = _watched(page)
    await page.goto(f"{desk.site}/")
    widget = await ClosedShadow.of(page)
    await widget.wait_text("Help")
    await _widget_tab_to(page, widget, "el.className === 'launch'", "the launcher")
    await page.keyboard.press("Enter")
    await widget.wait_text("Contact Lighthouse Tea")
    assert await widget.run("function() { return this.activeElement.type; }") == "email"
    await page.keyboard.type("keys-widget@example.com")
    await page.keyboard.press("Tab")
    await page.keyboard.type("Sent with the keyboard alone.")
    await _widget_tab_to(page, widget, "el.type === 'submit'", "Send")
    await page.keyboard.press("Enter")
    await widget.wait_text("Replies appear here")
    # The sent form is gone; the focus is in the reply box, not lost to the page.
    assert (await widget.run("function() { return this.activeElement.tagName; }")) == "TEXTAREA"

    listed = await desk.api("GET", "/v1/tickets", params={"source": "chat", "limit": 100})
    [ticket] = [t for t in listed.json()["data"]
                if t["subject"] == "Sent with the keyboard alone."]
    solved = await desk.api("POST", f"/v1/tickets/{ticket['id']}/state",
                            json={"state": "solved"})
    assert solved.status_code == 200, solved.text
    await widget.wait_text("How did we do?")
    await _widget_tab_to(page, widget, "el.type === 'radio'", "the rating choices", back=True)
    await page.keyboard.press("Space")
    chosen = await widget.run("function() { return this.activeElement.value; }")
    await page.keyboard.press("Tab")
    assert await widget.run("function() { return this.activeElement.tagName; }") == "TEXTAREA"
    await page.keyboard.type("Keyboard only.")
    await page.keyboard.press("Tab")
    await page.keyboard.press("Enter")
    await widget.wait_text(f"Your rating: {chosen.title()} · Keyboard only.")
    assert await widget.run("function() { return this.activeElement.textContent; }") \
        == "Send my rating"
    # Escape closes the panel and gives the launcher the focus back.
    await page.keyboard.press("Escape")
    assert await widget.run("function() { return this.activeElement.className; }") == "launch"
    assert not errors, errors


async def test_every_control_has_a_label(desk: Desk, context: BrowserContext) -> None:
    email = "labels@example.com"
    token = await desk.customer(email)
    solved = await _solved_ticket(desk, token, "Labelled")
    page = await context.new_page()
    portal = f"{desk.base}/portal/{desk.tenant.slug}/"
    await page.goto(portal)
    await expect(page.get_by_role("form", name="Sign in")).to_be_visible()
    seen = {"sign-in": await page.evaluate(UNLABELLED, await page.evaluate_handle("document"))}
    form = page.get_by_role("form", name="Sign in")
    await form.get_by_label("E-mail").fill(email)
    await form.get_by_label("Password").fill(PASSWORD)
    await form.get_by_role("button", name="Sign in").click()
    await expect(page.get_by_role("heading", name="My tickets")).to_be_visible()
    for name, address, ready in (
            ("tickets", "#/tickets", page.get_by_role("heading", name="My tickets")),
            ("new", "#/new", page.get_by_role("form", name="Ask for help")),
            ("ticket", f"#/tickets/{solved}", page.get_by_role("form", name="How did we do?"))):
        await page.goto(portal + address)
        await expect(ready).to_be_visible()
        seen[name] = await page.evaluate(UNLABELLED, await page.evaluate_handle("document"))

    site = await context.new_page()
    await site.goto(f"{desk.site}/")
    widget = await ClosedShadow.of(site)
    await widget.click(".launch")
    await widget.wait_text("Contact Lighthouse Tea")
    seen["widget-form"] = await widget.run(f"function() {{ return ({UNLABELLED})(this); }}")
    await widget.type("input[type=email]", "labels-widget@example.com")
    await widget.type("textarea", "Labelled widget")
    await widget.click("button[type=submit]")
    await widget.wait_text("Replies appear here")
    listed = await desk.api("GET", "/v1/tickets", params={"source": "chat", "limit": 100})
    [ticket] = [t for t in listed.json()["data"] if t["subject"] == "Labelled widget"]
    await desk.api("POST", f"/v1/tickets/{ticket['id']}/state", json={"state": "solved"})
    await widget.wait_text("How did we do?")
    seen["widget-thread"] = await widget.run(f"function() {{ return ({UNLABELLED})(this); }}")
    counted = await widget.run("function() { return this.querySelectorAll("
                               "'input, textarea').length; }")
    assert counted >= 5  # reply, its file, two choices, the comment: the check saw them
    assert seen == {k: [] for k in seen}, seen


@pytest.mark.parametrize("size", SIZES)
async def test_no_sideways_scrolling_at_phone_width_or_200_percent_zoom(
        browser: Browser, desk: Desk, size: dict[str, int]) -> None:
    email = f"narrow-{size['width']}@example.com"
    token = await desk.customer(email)
    solved = await _solved_ticket(desk, token, f"Narrow {LONG}")
    ctx = await browser.new_context(viewport=size, device_scale_factor=2)
    ctx.set_default_timeout(WAIT_MS)
    try:
        page = await ctx.new_page()
        portal = f"{desk.base}/portal/{desk.tenant.slug}/"
        await page.goto(portal)
        form = page.get_by_role("form", name="Sign in")
        found = {"sign-in": await page.evaluate(OVERFLOW, await page.evaluate_handle(
            "document.body"))}
        await form.get_by_label("E-mail").fill(email)
        await form.get_by_label("Password").fill(PASSWORD)
        await form.get_by_role("button", name="Sign in").click()
        await expect(page.get_by_role("heading", name="My tickets")).to_be_visible()
        for name, address, ready in (
                ("tickets", "#/tickets", page.locator(".ticket-card").first),
                ("new", "#/new", page.get_by_role("form", name="Ask for help")),
                ("ticket", f"#/tickets/{solved}", page.get_by_role("form",
                                                                   name="How did we do?"))):
            await page.goto(portal + address)
            await expect(ready).to_be_visible()
            found[name] = await page.evaluate(OVERFLOW, await page.evaluate_handle(
                "document.body"))

        await page.goto(f"{desk.site}/")
        widget = await ClosedShadow.of(page)
        await widget.click(".launch")
        await widget.wait_text("Contact Lighthouse Tea")
        await widget.type("input[type=email]", f"narrow-{size['width']}-w@example.com")
        await widget.type("textarea", LONG)
        await widget.click("button[type=submit]")
        await widget.wait_text("Replies appear here")

        async def drawn() -> bool:
            return LONG in await widget.text()

        await until(drawn, timeout=10, interval=0.1, what="the message in the thread")
        found["widget"] = await widget.run(f"function() {{ return ({OVERFLOW})(this); }}")
        panel = await widget.run("""function() {
            const p = this.querySelector('.panel');
            return {inner: p.scrollWidth <= p.clientWidth,
                    within: p.getBoundingClientRect().left >= 0
                        && p.getBoundingClientRect().right <= innerWidth};
        }""")
        assert panel == {"inner": True, "within": True}, panel
    finally:
        await ctx.close()
    for name, got in found.items():
        assert got["scroll"] <= got["width"] and not got["wide"], (name, got)
