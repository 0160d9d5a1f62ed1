"""Mailboxes and mail delivery in the console, in headless Chromium against ``helpdesk
serve`` on the demo (the fixtures of test_console_browser.py, on a database of this
module's own) and the session's recording SMTP server: an admin adds a mailbox pointing
at that server, a port out of range refused with its message next to the port's input;
"Test connection" says SMTP ok and IMAP failed with the reason (nothing listens on its
port); each password says whether it is stored, the mailbox is renamed with If-Match
(the stored password kept by its empty input), its IMAP password forgotten by its box,
and a mistaken one deleted. A mail taken in by the new mailbox's inbound address
becomes a ticket whose page shows the mail's CCs, and a staff reply on it shows as sent
once the scheduler has mailed it. A mailbox's quarantine lists its mail a page at a
time, with sender, subject and reason; a retry refused again and a discard say so, and
a retry of a mail discarded meanwhile shows the refusal."""

from __future__ import annotations

import re
import uuid

import httpx
import pytest
from playwright.async_api import expect

from tests.e2e import test_console_browser as base
from tests.e2e.test_console_browser import no_script_errors, refusals_asked_for, signed_in_as
from tests.support.smtp import SmtpServer, free_port
from tests.support.wait import until

console, context = base.console, base.context

pytestmark = [pytest.mark.slow, pytest.mark.timeout(240)]

ADMIN = "Priya Raman"


async def test_an_admin_sets_up_a_mailbox_tests_it_and_a_reply_shows_as_sent(
        console, context, smtp_server: SmtpServer):
    page = await signed_in_as(context, console, ADMIN)
    await page.goto(f"{console.base}/console/#/admin/mailboxes")
    form = page.get_by_role("form", name="Add a mailbox")
    local = f"desk{uuid.uuid4().hex[:8]}"
    address = f"{local}@mail.test"
    await form.get_by_label("Address").fill(address)
    await form.get_by_label("Name", exact=True).fill("Mail desk")
    await form.get_by_label("IMAP host").fill("127.0.0.1")
    await form.get_by_label("IMAP port").fill(str(free_port()))
    await form.get_by_label("IMAP security").select_option("none")
    await form.get_by_label("IMAP username").fill("desk")
    await form.get_by_label("IMAP password").fill("imap-secret")
    await form.get_by_label("SMTP host").fill("127.0.0.1")
    smtp_port = form.get_by_label("SMTP port")
    await smtp_port.fill("99999")
    await form.get_by_label("SMTP security").select_option("none")
    await form.get_by_role("button", name="Add the mailbox").click()
    await expect(smtp_port).to_have_attribute("aria-invalid", "true")
    await expect(form.locator("#mbx-new-smtp-port + .field-error")).to_contain_text("65535")
    refusals_asked_for(page, 422)
    listed = (await console.api("GET", "/v1/mailboxes", ADMIN)).json()["data"]
    assert address not in [b["address"] for b in listed]

    await smtp_port.fill(str(smtp_server.port))
    await form.get_by_role("button", name="Add the mailbox").click()
    secret = page.get_by_label("Inbound secret")
    await expect(secret).to_have_text(re.compile(r"^hdmail_"))
    inbound_secret = await secret.text_content()
    inbound_url = await page.locator(".inbound-url").text_content()
    [box] = [b for b in (await console.api("GET", "/v1/mailboxes", ADMIN)).json()["data"]
             if b["address"] == address]
    assert box["smtp"] == {"host": "127.0.0.1", "port": smtp_server.port, "security": "none",
                           "username": None, "password_set": False}
    assert box["imap"]["password_set"] is True
    item = page.locator(f".admin-item[data-id='{box['id']}']")
    await expect(item).to_have_attribute("open", "")
    key = f"mbx-{box['id'][:8]}"
    await expect(item.locator(f"#{key}-imap-password-hint")).to_have_text(
        "stored: leave empty to keep it")
    await expect(item.locator(f"#{key}-smtp-password-hint")).to_have_text("not set")
    await expect(item.get_by_label("Forget the stored SMTP password")).to_have_count(0)

    # The connection test: each server as it answered.
    await item.get_by_role("button", name="Test connection").click()
    await expect(item.locator("[data-server=smtp]")).to_have_attribute("data-status", "ok")
    imap = item.locator("[data-server=imap]")
    await expect(imap).to_have_attribute("data-status", "failed")
    await expect(imap).to_contain_text("ConnectionRefused")

    # Renamed, with If-Match on the version shown; the passwords kept.
    await item.get_by_label("Name", exact=True).fill("Mail desk (EU)")
    await item.get_by_role("button", name="Save the mailbox").click()
    item = page.locator(f".admin-item[data-id='{box['id']}']")
    await expect(item.locator("summary")).to_contain_text("version 2")
    got = (await console.api("GET", f"/v1/mailboxes/{box['id']}", ADMIN)).json()
    assert got["name"] == "Mail desk (EU)" and got["imap"]["username"] == "desk"
    assert got["imap"]["password_set"] is True

    # The IMAP password forgotten, by its box; the input empty.
    await item.get_by_label("Forget the stored IMAP password").check()
    await item.get_by_role("button", name="Save the mailbox").click()
    item = page.locator(f".admin-item[data-id='{box['id']}']")
    await expect(item.locator("summary")).to_contain_text("version 3")
    await expect(item.locator(f"#{key}-imap-password-hint")).to_have_text("not set")
    got = (await console.api("GET", f"/v1/mailboxes/{box['id']}", ADMIN)).json()
    assert got["imap"]["password_set"] is False and got["imap"]["username"] == "desk"

    # A mistaken mailbox, deleted.
    typo = (await console.api("POST", "/v1/mailboxes", ADMIN, json={
        "address": f"{local}x@mail.test"})).json()
    await page.reload()
    mistaken = page.locator(f".admin-item[data-id='{typo['id']}']")
    await mistaken.locator("summary").click()
    await mistaken.get_by_role("button", name="Delete the mailbox").click()
    await expect(mistaken).to_have_count(0)
    gone = await console.api("GET", f"/v1/mailboxes/{typo['id']}", ADMIN)
    assert gone.status_code == 404

    # A mail to the new mailbox becomes a ticket; a reply on it shows as sent.
    customer = f"ann-{uuid.uuid4().hex[:8]}@example.com"
    copied = f"bob-{uuid.uuid4().hex[:8]}@example.com"
    raw = (f"From: Ann <{customer}>\r\nTo: {address}\r\nCc: {copied}\r\n"
           f"Subject: Printer jam {local}\r\nMessage-ID: <{uuid.uuid4().hex}@example.com>\r\n"
           "\r\nThe printer is jammed again.\r\n").encode()
    async with httpx.AsyncClient(base_url=console.base) as http:
        taken = await http.post(inbound_url or "", content=raw, headers={
            "Authorization": f"Bearer {inbound_secret}", "Content-Type": "message/rfc822"})
    assert taken.status_code == 200 and taken.json()["outcome"] == "ticket", taken.text
    ticket = taken.json()["ticket_id"]
    await page.goto(f"{console.base}/console/#/tickets/{ticket}")
    await expect(page.get_by_role("heading", level=1)).to_have_text(f"Printer jam {local}")
    opening = page.locator(".message").first
    await expect(opening.locator(".mail-note")).to_contain_text(f"By mail from {customer}")
    await expect(opening.locator(".mail-note")).to_contain_text(f"cc {copied}")

    reply = f"A technician is on the way. ({uuid.uuid4().hex[:6]})"
    await page.get_by_label("Message", exact=True).fill(reply)
    await page.get_by_role("button", name="Send reply").click()
    mine = page.locator(".message", has_text=reply)
    note = mine.locator(".mail-note")
    # Shown as it goes: no row yet, queued, then sent, without reloading the page.
    await expect(note).to_have_attribute("data-delivery", "sent", timeout=45_000)
    await expect(note).to_contain_text(f"Mailed to {customer}")
    await expect(note).to_contain_text(copied)

    async def delivered() -> bool:
        return any(reply in d.message().get_body(("plain",)).get_content()
                   for d in smtp_server.to(customer))

    await until(delivered, timeout=10)
    no_script_errors(page)


async def test_an_admin_pages_retries_and_discards_quarantined_mail(console, context):
    local = f"quar{uuid.uuid4().hex[:8]}"
    box = (await console.api("POST", "/v1/mailboxes", ADMIN, json={
        "address": f"{local}@mail.test"})).json()
    # A page and one more (quarantine.js QUARANTINE_PAGE) of mail without a Message-ID,
    # its sender and subject readable.
    async with httpx.AsyncClient(base_url=console.base) as http:
        for n in range(11):
            raw = (f"From: Sender {n} <s{n}@example.com>\r\nTo: {local}@mail.test\r\n"
                   f"Subject: Broken {n}\r\n\r\nno id\r\n").encode()
            taken = await http.post(box["inbound_url"], content=raw, headers={
                "Authorization": f"Bearer {box['inbound_secret']}",
                "Content-Type": "message/rfc822"})
            assert taken.json()["outcome"] == "quarantined", taken.text
    page = await signed_in_as(context, console, ADMIN)
    await page.goto(f"{console.base}/console/#/admin/mailboxes")
    item = page.locator(f".admin-item[data-id='{box['id']}']")
    await item.locator("summary").click()
    panel = item.get_by_role("region", name=f"Quarantine of {local}@mail.test", exact=True)
    rows = panel.locator("tbody tr")
    await expect(rows).to_have_count(10)
    first = rows.first
    await expect(first.locator(".from")).to_have_text("Sender 0 <s0@example.com>")
    await expect(first.locator(".subject")).to_have_text("Broken 0")
    await expect(first.locator(".reason")).to_have_text("the message has no Message-ID")
    await panel.get_by_role("button", name="Load more").click()
    await expect(rows).to_have_count(11)
    await expect(panel.get_by_role("button", name="Load more")).to_be_hidden()

    # Retried, refused again: still listed, its attempts counted.
    await first.get_by_role("button", name="Retry").click()
    status = panel.get_by_role("status")
    await expect(status).to_contain_text("Still quarantined: the message has no Message-ID")
    await expect(first.locator(".attempts")).to_have_text("2")
    # Discarded: gone from the list and from the API.
    second = rows.nth(1)
    gone = await second.get_attribute("data-id")
    await second.get_by_role("button", name="Discard").click()
    await expect(status).to_contain_text("Discarded: Sender 1 <s1@example.com>")
    await expect(rows).to_have_count(10)
    listed = (await console.api("GET", f"/v1/mailboxes/{box['id']}/quarantine?limit=100",
                                ADMIN)).json()["data"]
    assert gone not in [q["id"] for q in listed] and len(listed) == 10
    assert [q["attempts"] for q in listed][:1] == [2]

    # Discarded elsewhere meanwhile: the retry's refusal is shown in the panel.
    third = rows.nth(1)
    other = await third.get_attribute("data-id")
    assert (await console.api("DELETE", f"/v1/mailboxes/{box['id']}/quarantine/{other}",
                              ADMIN)).status_code == 200
    await third.get_by_role("button", name="Retry").click()
    alert = panel.get_by_role("alert")
    await expect(alert).to_contain_text("The mail could not be retried")
    await expect(alert).to_contain_text(f"no quarantined mail {other}")
    refusals_asked_for(page, 404)
    no_script_errors(page)
