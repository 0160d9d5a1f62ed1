"""Satisfaction ratings over HTTP (docs/teamwork.md): a rating link spent once, a
forged one refused, a second rating replacing the first, none after close, and a
customer who cannot rate another's ticket."""

from __future__ import annotations

from typing import Any

import httpx

from handlers.tenants import NewTenant
from tests.e2e.conftest import auth
from tests.e2e.test_portal import app, clock, customer, open_for
from tests.e2e.test_widget import SHOP, allow, base, session

__all__ = ["app", "clock"]


async def move(http: httpx.AsyncClient, tenant: NewTenant, ticket_id: str, state: str) -> None:
    r = await http.post(f"/v1/tickets/{ticket_id}/state", headers=auth(tenant.admin_key),
                        json={"state": state})
    assert r.status_code == 200, r.text


async def rating_link(http: httpx.AsyncClient, tenant: NewTenant, ticket_id: str
                      ) -> httpx.Response:
    return await http.post(f"/v1/tickets/{ticket_id}/satisfaction-link",
                           headers=auth(tenant.admin_key))


def problem(r: httpx.Response, status: int, code: str) -> None:
    assert r.status_code == status, r.text
    assert r.headers["content-type"] == "application/problem+json"
    assert r.json()["code"] == code, r.text


async def satisfaction(http: httpx.AsyncClient, tenant: NewTenant, ticket_id: str
                       ) -> dict[str, Any] | None:
    r = await http.get(f"/v1/tickets/{ticket_id}", headers=auth(tenant.admin_key))
    assert r.status_code == 200, r.text
    return r.json().get("satisfaction")


async def test_a_rating_link_rates_once_and_a_forged_one_is_refused(http, tenant) -> None:
    ticket = await open_for(http, tenant, "ann@example.com")
    problem(await rating_link(http, tenant, ticket["id"]), 409, "ticket_not_solved")
    await move(http, tenant, ticket["id"], "solved")
    issued = await rating_link(http, tenant, ticket["id"])
    assert issued.status_code == 201, issued.text
    token = issued.json()["token"]

    forged = token[:-4] + ("AAAA" if not token.endswith("AAAA") else "BBBB")
    problem(await http.post(f"/v1/ratings/{forged}", json={"rating": "good"}), 404,
            "not_found")
    problem(await http.post("/v1/ratings/hds_nonsense", json={"rating": "good"}), 404,
            "not_found")
    assert await satisfaction(http, tenant, ticket["id"]) is None

    r = await http.post(f"/v1/ratings/{token}", json={"rating": "bad", "comment": "slow"})
    assert r.status_code == 200, r.text
    assert r.json()["satisfaction"]["rating"] == "bad"
    problem(await http.post(f"/v1/ratings/{token}", json={"rating": "good"}), 410,
            "rating_link_gone")
    got = await satisfaction(http, tenant, ticket["id"])
    assert got is not None and (got["rating"], got["comment"], got["via"]) == (
        "bad", "slow", "link")


async def test_a_second_rating_replaces_the_first_until_close(http, tenant) -> None:
    ticket = await open_for(http, tenant, "ann@example.com")
    ann = await customer(http, tenant, ticket)
    rate = f"/v1/portal/tickets/{ticket['id']}/rating"
    problem(await http.post(rate, headers=ann, json={"rating": "good"}), 409,
            "ticket_not_solved")
    await move(http, tenant, ticket["id"], "solved")
    spare = (await rating_link(http, tenant, ticket["id"])).json()["token"]
    for rating in ("bad", "good"):
        r = await http.post(rate, headers=ann, json={"rating": rating})
        assert r.status_code == 200, r.text
    got = await satisfaction(http, tenant, ticket["id"])
    assert got is not None and (got["rating"], got["via"]) == ("good", "portal")
    shown = await http.get(f"/v1/portal/tickets/{ticket['id']}", headers=ann)
    assert shown.json()["satisfaction"]["rating"] == "good"

    await move(http, tenant, ticket["id"], "closed")
    problem(await http.post(rate, headers=ann, json={"rating": "bad"}), 409, "ticket_closed")
    # A refused rating leaves the link unspent, and writes nothing.
    problem(await http.post(f"/v1/ratings/{spare}", json={"rating": "bad"}), 409,
            "ticket_closed")
    problem(await http.post(f"/v1/ratings/{spare}", json={"rating": "bad"}), 409,
            "ticket_closed")
    got = await satisfaction(http, tenant, ticket["id"])
    assert got is not None and got["rating"] == "good"


async def test_a_customer_cannot_rate_another_customers_ticket(http, tenant) -> None:
    mine = await open_for(http, tenant, "ann@example.com")
    theirs = await open_for(http, tenant, "bob@example.com")
    await move(http, tenant, theirs["id"], "solved")
    ann = await customer(http, tenant, mine)
    r = await http.post(f"/v1/portal/tickets/{theirs['id']}/rating", headers=ann,
                        json={"rating": "bad"})
    problem(r, 404, "not_found")
    assert await satisfaction(http, tenant, theirs["id"]) is None
    problem(await http.post(f"/v1/portal/tickets/{mine['id']}/rating", headers=ann,
                            json={"rating": "meh"}), 422, "validation_failed")


async def test_a_widget_session_rates_a_solved_ticket_it_opened(http, tenant) -> None:
    await allow(http, tenant, SHOP)
    visitor = await session(http, tenant, "ann@example.com")
    other = await session(http, tenant, "bob@example.com")
    r = await http.post(f"{base(tenant)}/tickets", headers=visitor,
                        json={"subject": "Where is my order?", "body": "Ordered last week"})
    assert r.status_code == 201, r.text
    ticket_id = r.json()["id"]
    await move(http, tenant, ticket_id, "solved")
    read = await http.get(f"{base(tenant)}/tickets/{ticket_id}", headers=visitor)
    assert "satisfaction" not in read.json(), read.text  # not rated yet
    rate = f"{base(tenant)}/tickets/{ticket_id}/rating"
    problem(await http.post(rate, headers=other, json={"rating": "bad"}), 404, "not_found")
    r = await http.post(rate, headers=visitor, json={"rating": "good", "comment": "fast"})
    assert r.status_code == 200, r.text
    got = await satisfaction(http, tenant, ticket_id)
    assert got is not None and (got["rating"], got["via"]) == ("good", "widget")
    # The session's read of the ticket shows the rating, as the portal's does.
    read = await http.get(f"{base(tenant)}/tickets/{ticket_id}", headers=visitor)
    assert read.status_code == 200, read.text
    assert (read.json()["satisfaction"]["rating"],
            read.json()["satisfaction"]["comment"]) == ("good", "fast")
