"""The console as an agent's inbox, in headless Chromium against ``helpdesk serve`` on the
demo (the fixtures of test_console_browser.py): an agent logs a phone ticket for a new
e-mail, finds it by a word of its body with the search box, assigns it to themself,
sees it under "My tickets" and sorts the queue by SLA due as the API does; a bulk
assign of five tickets where one is stale reports that one; a draft survives
navigation; group names reach the cards when /v1/groups answers late; a ticket that
does not exist is a not-found page without forms; a ``?tenant=`` link fills the sign-in
and the browser remembers it; an admin invites an agent and edits business hours, issues
and revokes a key, defines a ticket field, deactivates and reactivates an agent, and
sees the API's refusals in the forms."""

from __future__ import annotations

import asyncio
import re
import uuid
from typing import Any

import httpx
import pytest
from playwright.async_api import Page, Route, expect

from tests.e2e import test_console_browser as base
from tests.e2e.test_console_browser import Console, signed_in_as

# The demo served by `helpdesk serve` and the browser's contexts, as the console's other
# browser tests have them (the browser and the screenshots' folder: tests/e2e/conftest.py).
console, context = base.console, base.context

pytestmark = [pytest.mark.slow, pytest.mark.timeout(240)]

AGENT = "Jonas Weber"


async def _me(console: Console, who: str = AGENT) -> str:
    me = (await console.api("GET", "/v1/auth/me", who)).json()
    return str(me["agent"]["id"])


async def _open(console: Console, **body: Any) -> dict[str, Any]:
    r = await console.api("POST", "/v1/tickets", AGENT, json={
        "subject": "Saddle creaks", "body": "It creaks.", "source": "email",
        "requester": {"email": f"{uuid.uuid4().hex[:10]}@example.com"}, **body})
    assert r.status_code == 201, r.text
    return dict(r.json())


async def test_an_agent_logs_a_phone_ticket_finds_it_takes_it_and_sorts_by_due(
        console, context):
    page = await signed_in_as(context, console, AGENT)
    me = await _me(console)
    word = f"gearbox{uuid.uuid4().hex[:8]}"
    email = f"caller-{uuid.uuid4().hex[:8]}@example.com"
    subject = f"Caller's chain skips {word[-4:]}"

    await page.get_by_role("link", name="New ticket").click()
    form = page.get_by_role("form", name="New ticket")
    await form.get_by_label("E-mail").fill(email)
    await form.get_by_label("Name (optional)").fill("Pat Caller")
    await form.get_by_label("Channel").select_option("phone")
    await form.get_by_label("Subject").fill(subject)
    await form.get_by_label("What the customer said").fill(
        f"The chain skips on the third {word} since Tuesday.")
    await form.get_by_label("Priority").select_option("urgent")
    await form.get_by_role("button", name="Open ticket").click()
    await expect(page.get_by_role("heading", level=1)).to_have_text(subject)
    # The customer's words, logged by the agent: never "opened by" the agent.
    opening = page.locator(".message").first
    await expect(opening.locator(".message-kind")).to_have_text("From the customer")
    await expect(opening.locator(".message-logged")).to_have_text(f"logged by {AGENT}")
    await expect(page.locator(".meta")).to_contain_text("via Phone")
    ticket_id = page.url.rsplit("/", 1)[1]
    stored = (await console.api("GET", f"/v1/tickets/{ticket_id}", AGENT)).json()
    assert (stored["source"], stored["requester"]["email"]) == ("phone", email)
    assert stored["assignee"] is None

    # The search box finds it by a word of its body, with the word marked.
    await page.get_by_role("search", name="Search").get_by_role("searchbox").fill(word)
    await page.keyboard.press("Enter")
    hits = page.locator(".search-hit")
    await expect(hits.first.get_by_role("link")).to_have_text(subject)
    await expect(hits.first.locator(".snippet mark")).to_have_text(word)
    await hits.first.get_by_role("link").click()
    await expect(page.get_by_role("heading", level=1)).to_have_text(subject)

    # Assign to me.
    await page.get_by_role("button", name="Assign to me").click()
    await expect(page.get_by_label("Assignee", exact=True)).to_have_value(me)
    stored = (await console.api("GET", f"/v1/tickets/{ticket_id}", AGENT)).json()
    assert stored["assignee"] == me
    await expect(page.get_by_role("button", name="Assign to me")).to_have_count(0)
    # "?" lists the shortcuts of the page.
    await page.locator("h1").focus()
    await page.keyboard.press("?")
    await expect(page.get_by_role("dialog", name="Keyboard shortcuts")).to_contain_text(
        "assign to me")
    await page.keyboard.press("Escape")

    # "My tickets": the agent's active tickets, this one among them.
    await page.goto(f"{console.base}/console/#/queue")
    await page.get_by_role("navigation", name="Queues").get_by_role(
        "link", name="My tickets").click()
    await expect(page).to_have_url(re.compile(r"#/queue\?assignee=me&state=active$"))
    items = page.locator(".ticket-item")
    await expect(items.filter(has_text=subject)).to_have_count(1)
    mine = (await console.api("GET", "/v1/tickets", AGENT, params={
        "assignee": "me", "state": "active", "limit": 20})).json()["data"]
    await expect(items).to_have_count(len(mine))

    # Sorted by SLA due: the order the API gives, the urgent phone ticket near the top.
    await page.get_by_label("Order").select_option(label="SLA due soonest")
    await expect(page).to_have_url(re.compile(r"sort=sla_due"))
    by_due = (await console.api("GET", "/v1/tickets", AGENT, params={
        "assignee": "me", "state": "active", "sort": "sla_due", "limit": 20})).json()["data"]
    assert ticket_id in [t["id"] for t in by_due]
    await expect(items.locator("h2")).to_have_text([t["subject"] for t in by_due])
    ids = await items.evaluate_all("items => items.map((li) => li.dataset.id)")
    assert ids == [t["id"] for t in by_due]


async def test_a_bulk_assign_reports_the_one_ticket_that_went_stale(console, context):
    tag = f"bulk{uuid.uuid4().hex[:8]}"
    opened = [await _open(console, subject=f"Bulk {i} {tag}", tags=[tag]) for i in range(5)]
    stale = opened[2]
    page = await signed_in_as(context, console, AGENT)
    me = await _me(console)
    await page.goto(f"{console.base}/console/#/queue?tag={tag}")
    items = page.locator(".ticket-item")
    await expect(items).to_have_count(5)
    await expect(page.locator("#live")).to_have_text("Live")
    for t in opened:
        await page.get_by_role("checkbox", name=f"Select \u201c{t['subject']}\u201d").check()
    bar = page.get_by_role("form", name="Bulk actions")
    await expect(bar).to_contain_text("5 selected")

    # Someone else changes one of them, and this page does not hear of it in time (its
    # read of the changed ticket is held back): the queue still shows the old version.
    async def hold(route: Route) -> None:
        await route.abort()

    await page.route(f"**/v1/tickets/{stale['id']}", hold)
    changed = await console.api("POST", f"/v1/tickets/{stale['id']}/priority", AGENT,
                                json={"priority": "low"})
    assert changed.status_code == 200, changed.text
    await expect(page.locator(".queue .problems")).to_contain_text(
        "A live update could not be shown")

    await bar.get_by_label("Assign to").select_option("me")
    await bar.get_by_role("button", name="Assign selected").click()
    report = page.locator(".bulk-report")
    await expect(report).to_contain_text(f"4 of 5 assigned to {AGENT}. 1 not changed:")
    failures = report.locator(".bulk-failures li")
    await expect(failures).to_have_count(1)
    await expect(failures).to_contain_text(stale["subject"])
    await expect(failures).to_contain_text("someone else changed it")
    after = {t["id"]: (await console.api("GET", f"/v1/tickets/{t['id']}", AGENT)).json()
             for t in opened}
    assert [after[t["id"]]["assignee"] for t in opened] == [me, me, None, me, me]
    # The stale one stays selected, to try again once it is seen as it is.
    await expect(bar).to_contain_text("1 selected")


async def test_a_draft_survives_navigation_until_it_is_sent(console, context):
    ticket = await _open(console, subject=f"Draft {uuid.uuid4().hex[:6]}")
    page = await signed_in_as(context, console, AGENT)
    await page.goto(f"{console.base}/console/#/tickets/{ticket['id']}")
    await expect(page.get_by_role("heading", level=1)).to_have_text(ticket["subject"])
    message = page.get_by_label("Message", exact=True)
    await page.get_by_label("Internal note (agents only)").check()
    await message.fill("Half a thought about the saddle")
    await page.get_by_role("link", name="\u2190 Queue").click()
    await expect(page.locator(".ticket-item").first).to_be_visible()
    await page.go_back()
    await expect(page.get_by_role("heading", level=1)).to_have_text(ticket["subject"])
    await expect(message).to_have_value("Half a thought about the saddle")
    await expect(page.get_by_label("Internal note (agents only)")).to_be_checked()
    # A reload keeps it too; sending it forgets it.
    await page.reload()
    await expect(message).to_have_value("Half a thought about the saddle")
    await page.get_by_role("button", name="Add internal note").click()
    await expect(page.locator(".message-internal .message-body").last).to_have_text(
        "Half a thought about the saddle")
    await expect(message).to_have_value("")
    await page.reload()
    await expect(page.get_by_role("heading", level=1)).to_have_text(ticket["subject"])
    await expect(message).to_have_value("")


GROUP_ID_ON_A_CARD = re.compile(r"^group [0-9a-f]{8}$")


async def test_group_names_reach_the_cards_when_the_groups_answer_late(console, context):
    """/v1/groups answers 1.5 s late: the cards drawn before it must show the names."""
    answered = asyncio.Event()

    async def late(route: Route) -> None:
        await asyncio.sleep(1.5)
        await route.continue_()
        answered.set()

    await context.route(re.compile(r".*/v1/groups(\?.*)?$"), late)
    page: Page = await signed_in_as(context, console, AGENT)
    groups = page.locator(".ticket-item .group")
    await expect(groups.first).to_be_visible()
    await asyncio.wait_for(answered.wait(), 10)
    await expect(groups.filter(has_text=GROUP_ID_ON_A_CARD)).to_have_count(0)
    names = await groups.all_inner_texts()
    assert names and not any(GROUP_ID_ON_A_CARD.match(n) for n in names), names


async def test_a_ticket_that_does_not_exist_is_a_not_found_page(console, context):
    page = await signed_in_as(context, console, AGENT)
    await page.goto(f"{console.base}/console/#/tickets/{uuid.uuid4()}")
    await expect(page.get_by_role("heading", level=1)).to_have_text("Ticket not found")
    await expect(page.locator("form")).to_have_count(1)  # the top bar's search only
    await expect(page.get_by_label("Message", exact=True)).to_have_count(0)
    await expect(page.get_by_role("link", name="\u2190 Queue")).to_be_visible()
    await page.goto(f"{console.base}/console/#/nowhere/at/all")
    await expect(page.get_by_role("heading", level=1)).to_have_text("Page not found")


async def test_an_admin_invites_an_agent_and_edits_business_hours(console, context):
    original = (await console.api("GET", "/v1/settings", "Priya Raman")).json()
    page = await signed_in_as(context, console, "Priya Raman")
    await page.get_by_role("navigation", name="Sections").get_by_role(
        "link", name="Admin").click()
    await expect(page.get_by_role("heading", level=1)).to_have_text("Admin: Agents")
    email = f"new-{uuid.uuid4().hex[:8]}@tidewater.example"
    invite = page.get_by_role("form", name="Invite an agent")
    await invite.get_by_label("E-mail").fill(email)
    await invite.get_by_label("Name").fill("Robin New")
    await invite.get_by_role("button", name="Invite").click()
    await expect(page.locator(".issued")).to_contain_text(f"Invitation for {email}")
    token = await page.locator(".issued .token").inner_text()
    assert token.startswith("hdi_")
    # The token works once: the invited person sets a password with it.
    async with httpx.AsyncClient(base_url=console.base) as http:
        r = await http.post("/v1/auth/invitations/accept",
                            json={"token": token, "password": "a long new password"})
    assert r.status_code == 200, r.text
    # A malformed e-mail: the API's refusal is shown in the form.
    await invite.get_by_label("E-mail").fill("not an e-mail")
    await invite.get_by_label("Name").fill("Nobody")
    await invite.get_by_role("button", name="Invite").click()
    await expect(invite.locator(".problems [role=alert]")).to_contain_text(
        "Invite an agent: not done")

    await page.get_by_role("navigation", name="Admin").get_by_role(
        "link", name="Settings").click()
    await expect(page.get_by_role("heading", level=1)).to_have_text("Admin: Settings")
    form = page.get_by_role("form", name="Tenant settings")
    await form.get_by_label("SLA clocks run in business hours only").check()
    await form.get_by_label("Time zone").fill("Europe/Oslo")
    for day in ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday"):
        await form.get_by_label(f"{day} from").fill("08:00")
        await form.get_by_label(f"{day} until").fill("16:30")
    await form.get_by_label("Holidays").fill("2026-12-24, 2026-12-25")
    await form.get_by_role("button", name="Save settings").click()
    await expect(form.locator(".saved")).to_have_text("Settings saved.")
    stored = (await console.api("GET", "/v1/settings", "Priya Raman")).json()
    hours = stored["business_hours"]
    assert hours["timezone"] == "Europe/Oslo"
    assert hours["weekly"]["0"] == [["08:00", "16:30"]] and "5" not in hours["weekly"]
    assert hours["holidays"] == ["2026-12-24", "2026-12-25"]
    # A zone that does not exist: the API's detail is in the form, nothing is saved.
    await form.get_by_label("Time zone").fill("Mars/Olympus")
    await form.get_by_role("button", name="Save settings").click()
    await expect(form.locator(".problems [role=alert]")).to_contain_text("Mars/Olympus")
    again = (await console.api("GET", "/v1/settings", "Priya Raman")).json()
    assert again["business_hours"]["timezone"] == "Europe/Oslo"
    # Put back as it was, for the other tests of this demo.
    r = await console.api("PUT", "/v1/settings", "Priya Raman", json=original)
    assert r.status_code == 200, r.text


async def test_a_tenant_link_fills_the_sign_in_and_the_browser_remembers_it(console, context):
    page = await context.new_page()
    await page.goto(f"{console.base}/console/?tenant={console.rich.slug}")
    form = page.get_by_role("form", name="Sign in with your e-mail and password")
    await expect(form.get_by_label("Tenant", exact=True)).to_have_value(console.rich.slug)
    await expect(form.get_by_label("E-mail", exact=True)).to_be_focused()
    email, password = console.login(AGENT)
    await form.get_by_label("E-mail", exact=True).fill(email)
    await form.get_by_label("Password", exact=True).fill("not the password at all")
    await form.get_by_role("button", name="Sign in").click()
    # A refusal in words; its status and code are in the fold.
    alert = form.locator(".problems [role=alert]")
    await expect(alert).to_contain_text("Not signed in")
    await expect(alert.locator("details")).to_contain_text("401 sign_in_failed")
    await expect(alert.locator("details")).not_to_have_attribute("open", "")
    await form.get_by_label("Password", exact=True).fill(password)
    await form.get_by_role("button", name="Sign in").click()
    await expect(page.locator("#who")).to_contain_text(AGENT)
    await page.get_by_role("button", name="Sign out").click()
    # Another visit without the link: the tenant is remembered.
    again = await context.new_page()
    await again.goto(f"{console.base}/console/")
    await expect(again.get_by_role("form", name="Sign in with your e-mail and password")
                 .get_by_label("Tenant", exact=True)).to_have_value(console.rich.slug)


async def test_an_admin_issues_and_revokes_a_key_defines_a_field_and_deactivates(
        console, context):
    page = await signed_in_as(context, console, "Priya Raman")
    await page.goto(f"{console.base}/console/#/admin/keys")
    issue = page.get_by_role("form", name="Issue an API key")
    name = f"Report robot {uuid.uuid4().hex[:6]}"
    await issue.get_by_label("Name").fill(name)
    await issue.get_by_label("Role").select_option("analyst")
    await issue.get_by_role("button", name="Issue").click()
    secret = await page.locator(".issued .token").inner_text()
    assert secret.startswith("hd_")
    async with httpx.AsyncClient(base_url=console.base) as http:
        assert (await http.get("/v1/analytics/summary", headers={
            "Authorization": f"Bearer {secret}"})).status_code == 200
        # An agent key needs an agent: the API's refusal is in the form.
        await issue.get_by_label("Name").fill("Nobody's key")
        await issue.get_by_label("Role").select_option("agent")
        await issue.get_by_role("button", name="Issue").click()
        await expect(issue.locator(".problems [role=alert]")).to_contain_text(
            "Issue an API key: not done")
        await page.get_by_role("form", name=f"Revoke {name}").get_by_role(
            "button", name="Revoke").click()
        await expect(page.locator("tr", has_text=name)).to_contain_text("Revoked")
        assert (await http.get("/v1/analytics/summary", headers={
            "Authorization": f"Bearer {secret}"})).status_code == 401

    await page.goto(f"{console.base}/console/#/admin/fields")
    define = page.get_by_role("form", name="Define a ticket field")
    key = f"bike_{uuid.uuid4().hex[:6]}"
    await define.get_by_label("Key").fill(key)
    await define.get_by_label("Title").fill("Bike model")
    await define.get_by_label("Type").select_option("dropdown")
    await define.get_by_label("Options").fill("city: City bike\ncargo: Cargo bike")
    await define.get_by_role("button", name="Define").click()
    await expect(page.locator("tr", has_text=key)).to_contain_text("City bike, Cargo bike")
    stored = (await console.api("GET", f"/v1/ticket-fields/{key}", "Priya Raman")).json()
    assert [o["value"] for o in stored["options"]] == ["city", "cargo"]
    await define.get_by_label("Key").fill(key)
    await define.get_by_label("Title").fill("Again")
    await define.get_by_label("Type").select_option("text")
    await define.get_by_label("Options").fill("")
    await define.get_by_role("button", name="Define").click()
    await expect(define.locator(".problems [role=alert]")).to_contain_text("409")

    who = f"Temp {uuid.uuid4().hex[:6]}"
    added = await console.api("POST", "/v1/agents", "Priya Raman", json={
        "email": f"{who.replace(' ', '.').lower()}@tidewater.example", "name": who,
        "role": "agent"})
    assert added.status_code == 201, added.text
    await page.goto(f"{console.base}/console/#/admin/agents")
    row = page.locator("tbody tr", has_text=who).first
    await row.get_by_role("button", name="Deactivate").click()
    row = page.locator("tbody tr", has_text=who).first
    await expect(row).to_contain_text("Deactivated")
    await row.get_by_role("button", name="Reactivate").click()
    await expect(page.locator("tbody tr", has_text=who).first).to_contain_text("Active")
