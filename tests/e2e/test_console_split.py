"""Splitting a ticket in the console, in headless Chromium against ``helpdesk serve`` on
the demo (the fixtures of test_console_browser.py): an agent opens a ticket, chooses two
of its messages with checkboxes under "Split", confirms, and lands on the new ticket,
which holds those messages while the source no longer does; both pages link to each
other, and the source's history names the split. Confirming with nothing chosen says so
and sends nothing."""

from __future__ import annotations

import re
import uuid

import pytest
from playwright.async_api import expect

from tests.e2e import test_console_browser as base
from tests.e2e.test_console_browser import Console, no_script_errors, signed_in_as

console, context = base.console, base.context

pytestmark = [pytest.mark.slow, pytest.mark.timeout(240)]

AGENT = "Jonas Weber"


async def _thread(console: Console, ticket_id: str) -> list[str]:
    r = await console.api("GET", f"/v1/tickets/{ticket_id}/messages", AGENT,
                          params={"limit": 100})
    assert r.status_code == 200, r.text
    return [m["body"] for m in r.json()["data"]]


async def test_an_agent_splits_two_messages_off_and_lands_on_the_new_ticket(
        console, context):
    opened = await console.api("POST", "/v1/tickets", AGENT, json={
        "subject": "Bike and helmet", "body": "My bike creaks.", "source": "email",
        "tags": ["bike"], "requester": {"email": f"{uuid.uuid4().hex[:10]}@example.com"}})
    assert opened.status_code == 201, opened.text
    sid = opened.json()["id"]
    for body in ("Which model is it?", "Also my helmet strap broke.", "Helmet: send photo"):
        r = await console.api("POST", f"/v1/tickets/{sid}/messages", AGENT,
                              json={"body": body, "visibility": "internal"
                                    if body.startswith("Helmet:") else "public"})
        assert r.status_code == 201, r.text

    page = await signed_in_as(context, console, AGENT)
    await page.goto(f"{console.base}/console/#/tickets/{sid}")
    await expect(page.get_by_role("heading", level=1)).to_have_text("Bike and helmet")
    await expect(page.locator(".message")).to_have_count(4)

    await page.get_by_role("button", name="Split\u2026").click()
    form = page.get_by_role("form", name="Split the ticket")
    await expect(form).to_be_visible()
    # Nothing chosen: said so, nothing sent.
    await form.get_by_role("button", name="Move to a new ticket").click()
    await expect(page.get_by_text("No message chosen")).to_be_visible()
    assert len(await _thread(console, sid)) == 4

    await form.get_by_role("checkbox", name=re.compile("helmet strap")).check()
    await form.get_by_role("checkbox", name=re.compile("send photo")).check()
    await form.get_by_label("Subject of the new ticket").fill("Helmet strap")
    await form.get_by_role("button", name="Move to a new ticket").click()

    # The new ticket opens, with the two messages; the source keeps the other two.
    await expect(page.get_by_role("heading", level=1)).to_have_text("Helmet strap")
    await expect(page).not_to_have_url(re.compile(sid))
    nid = page.url.rsplit("/", 1)[1]
    await expect(page.locator(".message")).to_have_count(2)
    await expect(page.locator(".message-body")).to_have_text(
        ["Also my helmet strap broke.", "Helmet: send photo"])
    await expect(page.locator(".message-internal")).to_have_count(1)
    assert await _thread(console, nid) == ["Also my helmet strap broke.", "Helmet: send photo"]
    assert await _thread(console, sid) == ["My bike creaks.", "Which model is it?"]
    new = (await console.api("GET", f"/v1/tickets/{nid}", AGENT)).json()
    assert new["split_from"] == sid and new["tags"] == ["bike"]

    # Each links to the other.
    await page.get_by_role("link", name=f"ticket {sid[:8]}").click()
    await expect(page.get_by_role("heading", level=1)).to_have_text("Bike and helmet")
    await expect(page.locator(".message")).to_have_count(2)
    await expect(page.locator(".links")).to_contain_text("Messages moved to")
    await page.get_by_role("link", name=f"ticket {nid[:8]}").click()
    await expect(page.get_by_role("heading", level=1)).to_have_text("Helmet strap")
    no_script_errors(page)
