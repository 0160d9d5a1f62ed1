"""Callers that are customers, made over HTTP: a contact signed in to the portal, and
a widget page holding a widget session."""

from __future__ import annotations

import uuid

import httpx

PASSWORD = "a long enough password"
ORIGIN = "https://shop.example.com"


async def portal_headers(http: httpx.AsyncClient, h: dict[str, str],
                         email: str | None = None) -> dict[str, str]:
    """The bearer header of a contact (made for ``email``, or a fresh one) signed in to
    the portal; ``h`` are staff headers that may make contacts and portal links."""
    email = email or f"{uuid.uuid4()}@example.com"
    contact = (await http.post("/v1/contacts", headers=h, json={"email": email})).json()
    link = (await http.post(f"/v1/contacts/{contact['id']}/portal-link", headers=h)).json()
    await http.post("/v1/portal/auth/password", json={"token": link["token"],
                                                      "password": PASSWORD})
    tenant = (await http.get("/v1/auth/me", headers=h)).json()["tenant"]["id"]
    signed = await http.post("/v1/portal/auth/sign-in", json={
        "tenant": tenant, "email": email, "password": PASSWORD})
    assert signed.status_code == 200, signed.text
    return {"Authorization": f"Bearer {signed.json()['access_token']}"}


async def widget_headers(http: httpx.AsyncClient, h: dict[str, str]
                         ) -> tuple[str, dict[str, str]]:
    """The tenant's id and the headers of a widget page holding a new widget session
    (the tenant's ``widget_origins`` set to ``ORIGIN``; ``h`` are admin headers)."""
    settings = (await http.get("/v1/settings", headers=h)).json()
    if ORIGIN not in settings["widget_origins"]:
        await http.put("/v1/settings", headers=h, json={**settings, "widget_origins": [ORIGIN]})
    tenant = (await http.get("/v1/auth/me", headers=h)).json()["tenant"]["id"]
    opened = await http.post(f"/v1/widget/{tenant}/sessions", headers={"Origin": ORIGIN},
                             json={"email": f"{uuid.uuid4()}@example.com"})
    assert opened.status_code == 201, opened.text
    return tenant, {"Origin": ORIGIN,
                    "Authorization": f"Bearer {opened.json()['access_token']}"}
