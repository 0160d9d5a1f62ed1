"""Two agents on one ticket in headless Chromium, against ``helpdesk serve`` on the
demo: the second sees the first viewing and typing (the live feed's presence), and a
reply begun before the first agent's reply is refused with 412, says that someone
replied meanwhile and what, keeps the draft, and sends when sent again."""

from __future__ import annotations

import uuid

import pytest
from playwright.async_api import Browser, expect

from tests.e2e.test_console_browser import (  # the module's fixtures and helpers
    WAIT_MS,
    console,
    no_script_errors,
    refusals_asked_for,
    signed_in_as,
)

pytestmark = [pytest.mark.slow, pytest.mark.timeout(240)]

__all__ = ["console"]


async def test_two_agents_see_each_other_and_a_stale_reply_keeps_its_draft(console,
                                                                         browser: Browser):
    ticket = (await console.api("GET", "/v1/tickets", "Jonas Weber", params={
        "state": "open", "limit": 1})).json()["data"][0]
    address = f"{console.base}/console/#/tickets/{ticket['id']}"
    contexts = [await browser.new_context(viewport={"width": 1280, "height": 900})
                for _ in range(2)]
    for ctx in contexts:
        ctx.set_default_timeout(WAIT_MS)
    try:
        jonas = await signed_in_as(contexts[0], console, "Jonas Weber")
        aiko = await signed_in_as(contexts[1], console, "Aiko Tanaka")
        for page in (aiko, jonas):
            await page.goto(address)
            await expect(page.get_by_role("heading", level=1)).to_have_text(ticket["subject"])
        presence = aiko.locator(".presence")
        await expect(presence).to_have_text("Jonas Weber is viewing")
        await expect(jonas.locator(".presence")).to_have_text("Aiko Tanaka is viewing")

        # Jonas writes: Aiko sees him typing.
        await jonas.get_by_label("Message", exact=True).press_sequentially("Checking the ")
        await expect(presence).to_have_text("Jonas Weber is typing\u2026")

        # Aiko begins her reply; Jonas's is sent first.
        draft = f"Could you send us the printer's model? ({uuid.uuid4().hex[:6]})"
        await aiko.get_by_label("Message", exact=True).fill(draft)
        answer = f"Checking the logs now. ({uuid.uuid4().hex[:6]})"
        await jonas.get_by_label("Message", exact=True).fill(answer)
        await jonas.get_by_role("button", name="Send reply").click()
        await expect(jonas.locator(".message", has_text=answer)).to_have_count(1)
        await expect(presence).to_have_text("Jonas Weber is viewing")
        # The live feed shows his reply to her; her box is untouched.
        await expect(aiko.locator(".message", has_text=answer)).to_have_count(1)

        await aiko.get_by_role("button", name="Send reply").click()
        stale = aiko.locator(".reply-conflict")
        await expect(stale.get_by_role("heading")).to_have_text("Someone replied meanwhile")
        await expect(stale).to_contain_text(f"Jonas Weber: {answer}")
        await expect(aiko.get_by_label("Message", exact=True)).to_have_value(draft)
        await expect(aiko.locator(".message", has_text=draft)).to_have_count(0)
        refusals_asked_for(aiko, 412)

        # Sent again, as it is: it goes, once.
        await aiko.get_by_role("button", name="Send reply").click()
        await expect(aiko.locator(".message", has_text=draft)).to_have_count(1)
        await expect(stale).to_be_hidden()
        await expect(aiko.get_by_label("Message", exact=True)).to_have_value("")
        await expect(jonas.locator(".message", has_text=draft)).to_have_count(1)
        messages = (await console.api("GET", f"/v1/tickets/{ticket['id']}/messages",
                                      "Jonas Weber", params={"limit": 100})).json()["data"]
        assert [m["body"] for m in messages].count(draft) == 1
        assert [m["body"] for m in messages].count(answer) == 1

        # Jonas leaves the ticket: he is gone from her page at once.
        await jonas.goto(f"{console.base}/console/#/queue")
        await expect(presence).to_be_hidden()
        for page in (jonas, aiko):
            no_script_errors(page)
    finally:
        for ctx in contexts:
            await ctx.close()
