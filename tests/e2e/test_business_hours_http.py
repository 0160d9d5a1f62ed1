"""A tenant's business hours, set over the API, decide the SLA due times it shows."""

from __future__ import annotations

from datetime import datetime
from zoneinfo import ZoneInfo

from domain.business_hours import Calendar, add_business_time
from tests.e2e.conftest import NEW_TICKET, auth

HOURS = {"timezone": "America/New_York",
         "weekly": {str(day): [["09:00", "17:00"]] for day in range(5)},
         "holidays": ["2026-12-25"]}


async def test_due_times_count_business_hours_only(http, tenant):
    admin = auth(tenant.admin_key)
    settings = (await http.get("/v1/settings", headers=admin)).json()
    settings["business_hours"] = HOURS
    put = await http.put("/v1/settings", json=settings, headers=admin)
    assert put.status_code == 200, put.text

    opened = await http.post("/v1/tickets", json={**NEW_TICKET, "priority": "urgent"},
                             headers=admin)
    assert opened.status_code == 201, opened.text
    ticket = opened.json()
    created = datetime.fromisoformat(ticket["created_at"])
    calendar = Calendar.model_validate(HOURS)
    for metric, target_ms in (("first_response", 3_600_000), ("resolution", 28_800_000)):
        clock = ticket["sla"][metric]
        assert clock["target_ms"] == target_ms
        due = datetime.fromisoformat(clock["due_at"])
        # Whatever the hour the test runs at: the due time is the target counted in
        # New York office hours, never calendar time (8 hours of business time is at
        # least a whole working day away, so it always differs from created + 8 h).
        assert due == add_business_time(calendar, created, target_ms)
        local = due.astimezone(ZoneInfo("America/New_York"))
        assert local.weekday() < 5 and 9 <= local.hour + local.minute / 60 <= 17
    resolution_due = datetime.fromisoformat(ticket["sla"]["resolution"]["due_at"])
    assert (resolution_due - created).total_seconds() > 8 * 3600


async def test_a_shift_must_end_after_it_starts(http, tenant):
    admin = auth(tenant.admin_key)
    settings = (await http.get("/v1/settings", headers=admin)).json()
    for shifts, where in (({"0": [["09:00", "17:00"]], "2": [["17:00", "09:00"]]}, "2.0"),
                          ({"4": [["08:00", "12:00"], ["13:00", "13:00"]]}, "4.1"),
                          ({"6": [["22:00", "06:00"]]}, "6.0")):
        hours = {"timezone": "UTC", "weekly": shifts}
        r = await http.put("/v1/settings", json=settings | {"business_hours": hours},
                           headers=admin)
        assert r.status_code == 422, r.text
        problem = r.json()
        assert problem["code"] == "validation_failed"
        assert problem["errors"][0]["loc"] == ["body", "business_hours", "weekly",
                                               *where.split(".")]
        assert "end after it starts" in problem["errors"][0]["msg"]
    # A shift across midnight is two shifts, one ending at 24:00, one starting at 00:00.
    night = {"timezone": "UTC", "weekly": {"6": [["22:00", "24:00"]], "0": [["00:00", "06:00"]]}}
    r = await http.put("/v1/settings", json=settings | {"business_hours": night},
                       headers=admin)
    assert r.status_code == 200, r.text
    assert r.json()["business_hours"]["weekly"] == {"0": [["00:00", "06:00"]],
                                                    "6": [["22:00", "24:00"]]}
