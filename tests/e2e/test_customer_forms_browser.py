"""The customer pages' forms in headless Chromium, on the desk of
``tests/e2e/test_customer_browser.py`` (a tenant of its own behind a real ``helpdesk
serve``, the widget on a page of another origin): the widget's ticket fields filled
in and sent, which the staff API then reads on the ticket; a required field left
empty, by the browser's check or the API's refusal, says so next to it and sends
nothing; and a solved ticket's "How did we do?" in the widget and the portal, with the
current rating, a second one replacing it, and the refusals shown where they belong.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from playwright.async_api import BrowserContext, expect

from tests.e2e.test_customer_browser import (
    ClosedShadow,
    Desk,
    _sign_in,
    _tickets,
    _watched,
    context,
    desk,
)
from tests.support.wait import until

__all__ = ["context", "desk"]

FIELDS = (
    {"key": "tin", "title": "Tin size", "type": "dropdown", "intake": True,
     "required_on": "open", "options": [{"value": "small", "title": "Small"},
                                        {"value": "large", "title": "Large"}]},
    {"key": "order_no", "title": "Order number", "type": "text", "intake": True},
    {"key": "gift", "title": "It is a gift", "type": "checkbox", "intake": True},
    {"key": "score", "title": "Internal score", "type": "number"},
    {"key": "dispatch", "title": "Dispatched on", "type": "date", "intake": True,
     "customer_read_only": True},
)


@pytest.fixture(scope="module")
async def fields(desk: Desk) -> AsyncIterator[None]:
    """The desk's ticket fields: three open to customers (one required on open), one
    shown to them read-only, one for staff only."""
    for body in FIELDS:
        made = await desk.api("POST", "/v1/ticket-fields", json=body)
        assert made.status_code == 201, made.text
    yield


async def _open_in_widget(widget: ClosedShadow, email: str, text: str) -> None:
    """Fill in the widget's form (every field open to customers) and send it."""
    await widget.wait_text("Tin size")
    await widget.type("input[type=email]", email)
    await widget.type("textarea", text)
    await widget.run("function() { this.querySelector('select').value = 'small'; }")
    await widget.type("input[type=text]", "A-7")
    await widget.click("form button[type=submit]")
    await widget.wait_text("Replies appear here")

pytestmark = [pytest.mark.slow, pytest.mark.timeout(180)]


async def _error_next_to(widget: ClosedShadow, selector: str) -> str:
    """The error line right after the control (the one its aria-describedby names)."""
    got = await widget.run("""function(s) {
        const c = this.querySelector(s);
        const line = this.getElementById(c.getAttribute('aria-describedby'));
        const next = c.nextElementSibling;
        return {text: line.textContent, next: next === line,
                invalid: c.getAttribute('aria-invalid'), focused: this.activeElement === c};
    }""", selector)
    assert got["next"] and got["invalid"] == "true" and got["focused"], got
    return str(got["text"])


async def _state(desk: Desk, ticket_id: str, state: str) -> None:
    r = await desk.api("POST", f"/v1/tickets/{ticket_id}/state", json={"state": state})
    assert r.status_code == 200, r.text


async def _satisfaction(desk: Desk, ticket_id: str) -> dict[str, Any] | None:
    r = await desk.api("GET", f"/v1/tickets/{ticket_id}")
    assert r.status_code == 200, r.text
    found: dict[str, Any] | None = r.json().get("satisfaction")
    return found


async def test_the_widget_sends_its_ticket_fields_and_says_which_one_is_missing(
        desk: Desk, context: BrowserContext, fields: None, shots: Path) -> None:
    before = len(await _tickets(desk))
    page = await context.new_page()
    errors = _watched(page)
    await page.goto(f"{desk.site}/")
    widget = await ClosedShadow.of(page)
    await widget.click(".launch")
    text = await widget.wait_text("Tin size")
    assert "Order number" in text and "It is a gift" in text
    assert "Internal score" not in text  # staff-only: never drawn
    assert "Dispatched on" not in text  # read-only: not asked for
    await widget.type("input[type=email]", "fields@example.com")
    await widget.type("textarea", "The lid of my tin is stuck.")

    # The required dropdown left empty: the browser's check, next to the field, and
    # the focus on it; nothing is sent.
    await widget.click("form button[type=submit]")
    assert await _error_next_to(widget, "select")
    assert len(await _tickets(desk)) == before

    # The form was drawn with "Order number" optional; staff now require it. The API's
    # refusal names fields.order_no, and the widget shows it next to that field.
    patched = await desk.api("PATCH", "/v1/ticket-fields/order_no", json={"required_on": "open"})
    assert patched.status_code == 200, patched.text
    await widget.run("function() { const s = this.querySelector('select'); s.value = 'large';"
                     " s.dispatchEvent(new Event('change', {bubbles: true})); }")
    await widget.click("form button[type=submit]")
    await widget.wait_text("422 validation_failed")
    shown = await _error_next_to(widget, "input[type=text]")
    assert shown, shown
    assert await widget.run("function() { return this.querySelector('select')"
                            ".getAttribute('aria-invalid'); }") is None  # cleared
    assert len(await _tickets(desk)) == before
    await page.screenshot(path=str(shots / "widget-fields.png"))

    await widget.type("input[type=text]", "A-1042")
    await widget.click("input[type=checkbox]")
    await widget.click("form button[type=submit]")
    await widget.wait_text("Replies appear here")
    [ticket] = [t for t in await _tickets(desk) if t["subject"] == "The lid of my tin is stuck."]
    stored = await desk.api("GET", f"/v1/tickets/{ticket['id']}")
    assert stored.json()["fields"] == {"tin": "large", "order_no": "A-1042", "gift": True}
    # The visitor sees the values, and the read-only one once an agent sets it.
    await widget.wait_text("A-1042")
    set_ = await desk.api("POST", f"/v1/tickets/{ticket['id']}/fields",
                          json={"fields": {"dispatch": "2026-12-01", "score": 3}})
    assert set_.status_code == 200, set_.text
    shown = await widget.wait_text("2026-12-01")
    assert "Dispatched on" in shown and "Large" in shown and "Internal score" not in shown
    back = await desk.api("PATCH", "/v1/ticket-fields/order_no", json={"required_on": None})
    assert back.status_code == 200, back.text
    assert not errors, errors


async def test_the_widget_rates_a_solved_ticket_and_a_second_rating_replaces_the_first(
        desk: Desk, context: BrowserContext, fields: None, shots: Path) -> None:
    page = await context.new_page()
    errors = _watched(page)
    await page.goto(f"{desk.site}/")
    widget = await ClosedShadow.of(page)
    await widget.click(".launch")
    await _open_in_widget(widget, "rater@example.com", "Where is my parcel?")
    [ticket] = [t for t in await _tickets(desk) if t["subject"] == "Where is my parcel?"]
    assert "How did we do?" not in await widget.text()  # open: nothing to rate yet

    await _state(desk, ticket["id"], "solved")
    await widget.wait_text("How did we do?")
    rating = "form[aria-labelledby$='-rate']"
    # No choice: said next to the choices, nothing sent.
    await widget.click(f"{rating} button[type=submit]")
    missing = await widget.run("function(s) { return this.querySelector(s + ' .err')"
                               ".textContent; }", rating)
    assert missing, missing
    assert await _satisfaction(desk, ticket["id"]) is None
    # A comment over the API's bound: its refusal, next to the comment.
    await widget.click(f"{rating} input[value=bad]")
    await widget.run("function(s) { this.querySelector(s + ' textarea').value = "
                     "'x'.repeat(2001); }", rating)
    await widget.click(f"{rating} button[type=submit]")
    await widget.wait_text("422 validation_failed")
    assert await _error_next_to(widget, f"{rating} textarea")
    assert await _satisfaction(desk, ticket["id"]) is None

    await widget.run("function(s) { this.querySelector(s + ' textarea').value = ''; }", rating)
    await widget.type(f"{rating} textarea", "Took a week.")
    await widget.click(f"{rating} button[type=submit]")
    await widget.wait_text("Your rating: Bad · Took a week.")
    await page.screenshot(path=str(shots / "widget-rating.png"))
    got = await _satisfaction(desk, ticket["id"])
    assert got is not None and (got["rating"], got["comment"], got["via"]) == (
        "bad", "Took a week.", "widget")
    await widget.click(f"{rating} input[value=good]")
    await widget.run("function(s) { this.querySelector(s + ' textarea').value = ''; }", rating)
    await widget.click(f"{rating} button[type=submit]")
    await widget.wait_text("Your rating: Good")
    got = await _satisfaction(desk, ticket["id"])
    assert got is not None and (got["rating"], got["comment"]) == ("good", None)

    # Closed: the rating stands and can no longer be changed.
    await _state(desk, ticket["id"], "closed")

    async def form_gone() -> bool:
        return bool(await widget.run("function(s) { return !this.querySelector(s); }", rating))

    await until(form_gone, timeout=10, interval=0.1, what="the rating form to go")
    assert "Your rating: Good" in await widget.text()
    assert not errors, errors


async def test_the_portal_rates_a_solved_ticket(desk: Desk, context: BrowserContext,
                                                fields: None, shots: Path) -> None:
    email = "portal-rater@example.com"
    token = await desk.customer(email)
    async with httpx.AsyncClient(base_url=desk.base) as client:
        made = await client.post("/v1/portal/tickets", headers={
            "Authorization": f"Bearer {token}"}, json={
                "subject": "Rate me", "body": "x",
                "fields": {"tin": "small", "order_no": "A-9"}})
    assert made.status_code == 201, made.text
    ticket_id = made.json()["id"]
    page = await context.new_page()
    errors = _watched(page)
    await page.goto(f"{desk.base}/portal/{desk.tenant.slug}/#/tickets/{ticket_id}")
    await _sign_in(page, email)
    await page.goto(f"{desk.base}/portal/{desk.tenant.slug}/#/tickets/{ticket_id}")
    await expect(page.get_by_role("heading", name="Rate me")).to_be_visible()
    # The read-only field: on the ticket once an agent sets it, never in the form.
    set_ = await desk.api("POST", f"/v1/tickets/{ticket_id}/fields",
                          json={"fields": {"dispatch": "2026-12-01"}})
    assert set_.status_code == 200, set_.text
    await page.reload()  # a change of values is not on the customer's live feed
    await expect(page.locator(".ticket-field-values dd[data-key=dispatch]")).to_have_text(
        "2026-12-01")
    await expect(page.locator(".ticket-field-values")).to_contain_text("Dispatched on")
    rate = page.get_by_role("form", name="How did we do?")
    await expect(rate).to_have_count(0)

    await _state(desk, ticket_id, "solved")  # arrives on the live feed
    await expect(rate).to_be_visible()
    await rate.get_by_role("button", name="Send my rating").click()
    group = rate.get_by_role("group", name="How did we do?")
    await expect(group).to_have_accessible_description("Choose good or bad.")
    assert await _satisfaction(desk, ticket_id) is None
    await rate.get_by_label("Good").check()
    await rate.get_by_label("Comment (optional)").fill("Quick and kind.")
    await rate.get_by_role("button", name="Send my rating").click()
    await expect(page.locator(".current-rating")).to_have_text(
        "Your rating: Good · Quick and kind.")
    got = await _satisfaction(desk, ticket_id)
    assert got is not None and (got["rating"], got["via"]) == ("good", "portal")
    await page.screenshot(path=str(shots / "portal-rating.png"), full_page=True)

    # A refusal is shown with its problem, and its message next to the comment.
    await rate.get_by_label("Bad").check()
    await rate.get_by_label("Comment (optional)").fill("x" * 2001)
    await rate.get_by_role("button", name="Send my rating").click()
    await expect(rate.get_by_role("alert")).to_contain_text("body.comment")
    comment = rate.get_by_label("Comment (optional)")
    await expect(comment).to_have_attribute("aria-invalid", "true")
    await expect(comment).to_have_accessible_description(re.compile("2000"))
    got = await _satisfaction(desk, ticket_id)
    assert got is not None and got["rating"] == "good"

    # Closed (the live feed redraws the ticket): the rating stands, no form to change it.
    await _state(desk, ticket_id, "closed")
    await expect(rate).to_have_count(0)
    await expect(page.locator(".current-rating")).to_have_text(
        "Your rating: Good · Quick and kind.")
    assert not errors, errors


async def test_the_portal_form_asks_for_the_fields_customers_set_only(
        desk: Desk, context: BrowserContext, fields: None) -> None:
    email = "portal-form@example.com"
    await desk.customer(email)
    page = await context.new_page()
    errors = _watched(page)
    await page.goto(f"{desk.base}/portal/{desk.tenant.slug}/")
    await _sign_in(page, email)
    await page.get_by_role("link", name="New ticket").first.click()
    form = page.get_by_role("form", name="Ask for help")
    await expect(form.get_by_label("Tin size (required)")).to_be_visible()
    await expect(form.get_by_label("Order number")).to_be_visible()
    await expect(form.get_by_label("Dispatched on")).to_have_count(0)
    await expect(form.get_by_label("Internal score")).to_have_count(0)
    assert not errors, errors
