"""SLA policies, calendars and the past desk in the console, in headless Chromium against
``helpdesk serve`` on the demo (the fixtures of test_console_browser.py, on a database of
this module's own: the policies made here would change the clocks the other modules'
tickets start): an admin creates a calendar and the default policy, a target over 366
days is refused with its message next to the target's input, the ticket page names the
policy behind each clock by name, for an agent too (who may not read policies), moving
a policy in the order is one request that sets the whole order, and the queue's past
view shows the desk as it stood before changes made after the moment picked,
read-only, with the way back to now. It saves
``sla-policies.png`` and ``queue-as-of.png`` (``scripts/screenshots`` into docs/screenshots/)."""

from __future__ import annotations

import re
import uuid
from datetime import UTC, datetime

import pytest
from playwright.async_api import expect

from tests.e2e import test_console_browser as base
from tests.e2e.test_console_browser import no_script_errors, refusals_asked_for, signed_in_as

console, context = base.console, base.context

pytestmark = [pytest.mark.slow, pytest.mark.timeout(240)]

ADMIN = "Priya Raman"
HOUR = 3_600_000


async def test_an_admin_makes_a_calendar_and_a_policy_and_reads_the_desk_as_it_stood(
        console, context, shots):
    page = await signed_in_as(context, console, ADMIN)

    # A calendar: two shifts on Monday, one on Friday, a holiday.
    await page.goto(f"{console.base}/console/#/admin/calendars")
    form = page.get_by_role("form", name="Create a calendar")
    await form.get_by_label("Name").fill("Berlin office")
    await form.get_by_label("Time zone").fill("Europe/Berlin")
    await form.get_by_label("Monday").fill("09:00-12:00, 13:00-17:00")
    await form.get_by_label("Friday").fill("09:00-15:00")
    await form.get_by_label("Holidays").fill("2026-12-25")
    await form.get_by_role("button", name="Create the calendar").click()
    await expect(page.locator(".admin-item summary")).to_contain_text(["Berlin office"])
    calendar = (await console.api("GET", "/v1/calendars", ADMIN)).json()["data"][0]
    assert calendar["hours"] == {"timezone": "Europe/Berlin", "holidays": ["2026-12-25"],
                                 "weekly": {"0": [["09:00", "12:00"], ["13:00", "17:00"]],
                                            "4": [["09:00", "15:00"]]}}

    # The tenant's first policy is its default; a target over 366 days is a 422 whose
    # message stands next to the target's input, and nothing is made.
    await page.get_by_role("navigation", name="Admin").get_by_role(
        "link", name="SLA policies").click()
    form = page.get_by_role("form", name="Create an SLA policy")
    await expect(form.get_by_label("The default policy")).to_be_checked()
    await form.get_by_label("Name").fill("Standard")
    first_reply = form.get_by_label("First reply", exact=True)
    await first_reply.fill(str(367 * 24))
    await form.get_by_label("Resolution", exact=True).fill("72")
    await form.get_by_label("Agent work", exact=True).fill("4")
    await form.get_by_label("Calendar").select_option(label="Berlin office")
    await form.get_by_role("button", name="Create the policy").click()
    await expect(form.locator(".problem-title")).to_be_visible()
    await expect(first_reply).to_have_attribute("aria-invalid", "true")
    note = form.locator("#pol-new-first_reply_ms + .field-error")
    await expect(note).to_contain_text("(366 days)")
    await expect(form.locator(".problem-fields")).to_contain_text("targets.first_reply_ms")
    refusals_asked_for(page, 422)
    assert (await console.api("GET", "/v1/sla-policies", ADMIN)).json()["data"] == []

    await first_reply.fill("8")
    await form.get_by_role("button", name="Create the policy").click()
    await expect(page.locator(".policy-order li")).to_have_text(
        ["Standard (the default, always last)"])
    await expect(first_reply).not_to_have_attribute("aria-invalid", "true")
    [policy] = (await console.api("GET", "/v1/sla-policies", ADMIN)).json()["data"]
    assert (policy["default"], policy["calendar_id"]) == (True, calendar["id"])
    assert policy["targets"]["first_reply_ms"] == 8 * HOUR
    assert policy["targets"]["resolution_ms"] == 72 * HOUR
    assert policy["targets"]["agent_work_ms"] == 4 * HOUR
    # The policy made is shown open, its form filled in.
    made = page.locator(f'.admin-item[data-id="{policy["id"]}"]')
    await expect(made).to_have_attribute("open", "")
    await expect(made.get_by_label("First reply", exact=True)).to_have_value("8")
    await expect(made.get_by_label("Agent work", exact=True)).to_have_value("4")
    await page.screenshot(path=str(shots / "sla-policies.png"), full_page=True)

    # Two more policies (on tags no ticket here has); moving one down is one request
    # that sets the whole order, not a PATCH per policy moved.
    for name in ("VIP", "Partners"):
        r = await console.api("POST", "/v1/sla-policies", ADMIN, json={
            "name": name, "conditions": [{"field": "tags", "op": "contains",
                                          "value": f"{name.lower()}-only"}],
            "targets": {"first_reply_ms": HOUR}})
        assert r.status_code == 201, r.text
    await page.reload()
    order = page.locator(".policy-order li")
    await expect(order).to_have_count(3)
    await expect(order.nth(0)).to_contain_text("VIP")
    writes: list[str] = []
    page.on("request", lambda q: writes.append(f"{q.method} {q.url.split('/v1/')[-1]}")
            if q.method in ("PUT", "PATCH") else None)
    await page.get_by_role("button", name="Move down: VIP").click()
    await expect(order.nth(0)).to_contain_text("Partners")
    await expect(order.nth(1)).to_contain_text("VIP")
    await expect(order.nth(2)).to_contain_text("Standard (the default, always last)")
    assert writes == ["PUT sla-policies/order"]
    positions = {p["name"]: p["position"] for p in (await console.api(
        "GET", "/v1/sla-policies", ADMIN)).json()["data"] if not p["default"]}
    assert positions == {"Partners": 10, "VIP": 20}

    # The settings' targets no longer set clocks: shown, not offered.
    await page.get_by_role("navigation", name="Admin").get_by_role("link", name="Settings").click()
    await expect(page.locator("#sla-urgent-first")).to_be_disabled()
    await expect(page.get_by_text("SLA policies set the clocks now")).to_be_visible()

    # A moment, then changes after it: a ticket's priority, and a ticket opened (on the
    # policy just made, which its clocks name).
    shown = (await console.api("GET", "/v1/tickets", ADMIN, params={"limit": 20})).json()
    changed = next(t for t in shown["data"][:10] if t["priority"] != "urgent")
    picked = datetime.now(UTC).replace(microsecond=0)
    r = await console.api("POST", f"/v1/tickets/{changed['id']}/priority", ADMIN,
                          json={"priority": "urgent"})
    assert r.status_code == 200, r.text
    subject = f"Invoice twice {uuid.uuid4().hex[:6]}"
    r = await console.api("POST", "/v1/tickets", ADMIN, json={
        "subject": subject, "body": "Charged twice.", "source": "email",
        "requester": {"email": f"{uuid.uuid4().hex[:10]}@example.com"}})
    assert r.status_code == 201, r.text
    opened = r.json()

    await page.goto(f"{console.base}/console/#/tickets/{opened['id']}")
    await expect(page.locator('.clock[data-metric="first_response"] .clock-policy')).to_have_text(
        "Policy Standard, version 1")
    # The agent-work clock has its card too, on the same policy.
    work = page.locator('.clock[data-metric="agent_work"]')
    await expect(work).to_contain_text("Agent work")
    await expect(work.locator(".clock-policy")).to_have_text("Policy Standard, version 1")

    # The desk as it stood at the moment picked: read-only, the changes not in it.
    await page.goto(f"{console.base}/console/#/queue")
    items = page.locator(".ticket-item")
    await expect(items.first.locator("h2")).to_have_text(subject)
    await page.get_by_text("The desk as it stood at another moment").click()
    local = await page.evaluate("""(iso) => {
        const d = new Date(iso), two = (n) => String(n).padStart(2, '0');
        return `${d.getFullYear()}-${two(d.getMonth() + 1)}-${two(d.getDate())}T`
          + `${two(d.getHours())}:${two(d.getMinutes())}:${two(d.getSeconds())}`;
    }""", picked.isoformat())
    await page.get_by_label("As of (date and time)").fill(local)
    await page.get_by_role("button", name="Show the desk then").click()
    await expect(page).to_have_url(re.compile(r"#/queue\?as_of="))
    banner = page.get_by_role("note")
    await expect(banner).to_contain_text("Past view: the desk as it stood at")
    past = (await console.api("GET", "/v1/tickets", ADMIN, params={
        "as_of": picked.isoformat(), "limit": 20})).json()
    await expect(banner).to_contain_text(f"after event {past['as_of_seq']}")
    await expect(items.locator("h2")).to_have_text([t["subject"] for t in past["data"]])
    assert subject not in [t["subject"] for t in past["data"]]
    card = page.locator(f'.ticket-item[data-id="{changed["id"]}"]')
    await expect(card.locator(f".priority-{changed['priority']}")).to_be_visible()
    # No commands: no new ticket, no selection for bulk changes, no live feed's order.
    await expect(page.get_by_role("link", name="New ticket")).to_have_count(0)
    await expect(page.locator(".pick")).to_have_count(0)
    await expect(page.get_by_label("Order")).to_be_disabled()
    await page.screenshot(path=str(shots / "queue-as-of.png"))

    await banner.get_by_role("link", name="Back to now").click()
    await expect(page).to_have_url(re.compile(r"#/queue$"))
    await expect(page.get_by_role("note")).to_have_count(0)
    await expect(items.first.locator("h2")).to_have_text(subject)
    await expect(card.locator(".priority-urgent")).to_be_visible()
    await expect(page.get_by_role("link", name="New ticket")).to_be_visible()
    await expect(page.locator(".pick").first).to_be_visible()
    no_script_errors(page)

    # An agent may not read policies: the clock names the policy by the name its ticket
    # records with it, and the admin pages are not theirs.
    page = await signed_in_as(context, console, "Jonas Weber")
    await page.goto(f"{console.base}/console/#/tickets/{opened['id']}")
    await expect(page.locator('.clock[data-metric="first_response"] .clock-policy')).to_have_text(
        "Policy Standard, version 1")
    # The agent-work clock has its card too, on the same policy.
    work = page.locator('.clock[data-metric="agent_work"]')
    await expect(work).to_contain_text("Agent work")
    await expect(work.locator(".clock-policy")).to_have_text("Policy Standard, version 1")
    await expect(page.get_by_role("navigation", name="Sections").get_by_role(
        "link", name="Admin")).to_have_count(0)
    no_script_errors(page)
