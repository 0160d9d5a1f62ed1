"""Files in the console, in headless Chromium against ``helpdesk serve`` on the demo: an
agent attaches a screenshot to a reply (the file picker; a file dropped on the form is
taken too), sees its thumbnail and the ticket's files, and the customer, signed in to
the portal, finds it on their ticket (through the portal's API: the portal has no
pages) and downloads the same bytes."""

from __future__ import annotations

import hashlib
import re
import uuid

import httpx
import pytest
from playwright.async_api import expect

from tests.e2e.test_console_browser import (  # the module's fixtures and helpers
    console,
    context,
    no_script_errors,
    signed_in_as,
)

pytestmark = [pytest.mark.slow, pytest.mark.timeout(240)]

__all__ = ["console", "context"]

PASSWORD = "the customer's own password"


async def test_an_agent_attaches_a_screenshot_and_the_customer_portal_lists_it(console,
                                                                             context):
    agent = "Jonas Weber"
    tickets = (await console.api("GET", "/v1/tickets", agent, params={
        "state": "open", "limit": 100})).json()["data"]
    ticket = next(t for t in tickets if t["requester"].get("contact_id"))
    page = await signed_in_as(context, console, agent)
    await page.goto(f"{console.base}/console/#/tickets/{ticket['id']}")
    await expect(page.get_by_role("heading", level=1)).to_have_text(ticket["subject"])

    # A file dropped on the form is chosen like a picked one (and can be removed).
    await page.evaluate("""() => {
        const data = new DataTransfer();
        data.items.add(new File(['dropped'], 'dropped.txt', {type: 'text/plain'}));
        const form = document.querySelector('form.reply');
        form.dispatchEvent(new DragEvent('dragover', {dataTransfer: data, bubbles: true,
                                                      cancelable: true}));
        form.dispatchEvent(new DragEvent('drop', {dataTransfer: data, bubbles: true,
                                                  cancelable: true}));
    }""")
    chosen = page.locator(".chosen-file")
    await expect(chosen).to_have_count(1)
    await expect(chosen).to_contain_text("dropped.txt")
    await page.get_by_role("button", name="Remove dropped.txt").click()
    await expect(chosen).to_have_count(0)

    shot = await page.screenshot()
    await page.locator("#reply-files").set_input_files(
        files=[{"name": "screenshot.png", "mimeType": "image/png", "buffer": shot}])
    await expect(chosen).to_contain_text("screenshot.png")
    reply = f"Here is what I see ({uuid.uuid4().hex[:6]})"
    await page.get_by_label("Message", exact=True).fill(reply)
    await page.get_by_role("button", name="Send reply").click()
    mine = page.locator(".message", has_text=reply)
    await expect(mine).to_have_count(1)
    thumb = mine.locator("img.thumbnail")
    await expect(thumb).to_have_attribute("src", re.compile(r"^blob:"))
    await page.wait_for_function(
        "img => img.complete && img.naturalWidth > 0", arg=await thumb.element_handle())
    await expect(mine.locator(".attachment")).to_contain_text("screenshot.png")
    await expect(page.locator(".files-table")).to_contain_text("screenshot.png")
    await expect(chosen).to_have_count(0)
    no_script_errors(page)

    # The customer: a portal password from staff, a sign-in, their ticket's messages.
    contact = ticket["requester"]["contact_id"]
    link = (await console.api("POST", f"/v1/contacts/{contact}/portal-link", agent)).json()
    async with httpx.AsyncClient(base_url=console.base) as http:
        done = await http.post("/v1/portal/auth/password", json={
            "token": link["token"], "password": PASSWORD})
        assert done.status_code == 200, done.text
        signed = await http.post("/v1/portal/auth/sign-in", json={
            "tenant": str(console.rich.tenant_id), "email": done.json()["email"],
            "password": PASSWORD})
        assert signed.status_code == 200, signed.text
        customer = {"Authorization": f"Bearer {signed.json()['access_token']}"}
        messages = (await http.get(f"/v1/portal/tickets/{ticket['id']}/messages",
                                   headers=customer, params={"limit": 100})).json()["data"]
        listed = next(m for m in messages if m["body"] == reply)
        [attachment] = listed["attachments"]
        assert (attachment["name"], attachment["type"]) == ("screenshot.png", "image/png")
        assert attachment["sha256"] == hashlib.sha256(shot).hexdigest()
        got = await http.get(f"/v1/portal/attachments/{attachment['id']}", headers=customer)
        assert got.status_code == 200 and got.content == shot
