"""The tenant stream's events of agents, API keys, the webhook, the settings and the
mailboxes, pinned whole (type and payload): how their handlers decide must never change
what is recorded, so a feed consumer, a projection or an audit reads the same facts."""

from __future__ import annotations

from tests.e2e.conftest import bearer
from tests.e2e.test_admin_routes import GOOD_SETTINGS

SETTINGS = {**GOOD_SETTINGS, "text_search": "english",
            "widget_origins": ["HTTPS://Shop.Example.com", "http://localhost:3000"]}

STORED_SETTINGS = {
    "sla_targets": GOOD_SETTINGS["sla_targets"],
    "business_hours": {"timezone": "Europe/Berlin",
                       "weekly": {"0": [["09:00", "17:00"]], "4": [["09:00", "13:00"]]},
                       "holidays": ["2026-12-25"]},
    "paused_states": ["pending", "on_hold", "solved"],
    "sweep": {"pending_days": 5, "solved_days": 2},
    "group_sla_targets": {},
    "text_search": "english",
    "widget_origins": ["http://localhost:3000", "https://shop.example.com"],
}


async def test_every_tenant_aggregate_records_what_it_always_recorded(http, make_tenant):
    t = await make_tenant()
    h = bearer(t.admin_key.secret)

    async def ok(method: str, path: str, **kw: object) -> dict:
        r = await http.request(method, path, headers=h, **kw)
        assert r.status_code in (200, 201), r.text
        return r.json()

    ann = (await ok("POST", "/v1/agents", json={"email": "ann@example.com", "name": "Ann"}))["id"]
    await ok("PATCH", f"/v1/agents/{ann}", json={"name": "Ann B", "role": "admin"})
    await ok("PATCH", f"/v1/agents/{ann}", json={"name": "Ann B"})  # nothing changes
    await ok("PATCH", f"/v1/agents/{ann}", json={"active": False, "email": "ann@example.com"})
    await ok("PATCH", f"/v1/agents/{ann}", json={"active": True})
    key = await ok("POST", "/v1/api-keys", json={"name": "ops", "role": "admin",
                                                 "agent_id": ann})
    await ok("DELETE", f"/v1/api-keys/{key['id']}")
    await ok("DELETE", f"/v1/api-keys/{key['id']}")  # revoked already: no event
    await ok("PUT", "/v1/webhooks", json={"url": "https://hooks.example.com/in",
                                          "secret": "s" * 16, "event_types": ["*"]})
    await ok("PUT", "/v1/webhooks", json={"url": "https://hooks.example.com/in",
                                          "event_types": ["TicketOpened"], "enabled": False})
    await ok("PUT", "/v1/settings", json=SETTINGS)
    await ok("PUT", "/v1/settings", json=SETTINGS)  # the same again: no event
    box = await ok("POST", "/v1/mailboxes", json={
        "address": "support@acme.test", "name": "Support", "smtp": {
            "host": "smtp.acme.test", "port": 587, "username": "u", "password": "p" * 12}})
    await ok("PATCH", f"/v1/mailboxes/{box['id']}", json={"name": "Help", "imap": {
        "host": "imap.acme.test", "port": 993, "username": "u", "password": "q" * 12}})
    await ok("PATCH", f"/v1/mailboxes/{box['id']}", json={"smtp": None})
    await ok("DELETE", f"/v1/mailboxes/{box['id']}")  # it never took in or sent mail

    smtp = {"host": "smtp.acme.test", "port": 587, "security": "starttls", "username": "u"}
    imap = {"host": "imap.acme.test", "port": 993, "security": "tls", "username": "u",
            "folder": "INBOX"}
    r = await http.get("/v1/events", params={"stream_id": str(t.tenant_id), "limit": 100},
                       headers=h)
    assert r.status_code == 200, r.text
    recorded = [(e["type"], {k: v for k, v in e["data"].items() if k != "at"})
                for e in r.json()["data"][1:]]  # after the operator's first key
    assert recorded == [
        ("AgentAdded", {"agent_id": ann, "email": "ann@example.com", "name": "Ann",
                        "role": "agent"}),
        ("AgentUpdated", {"agent_id": ann, "email": None, "name": "Ann B", "role": "admin",
                          "active": None}),
        ("AgentUpdated", {"agent_id": ann, "email": None, "name": None, "role": None,
                          "active": False}),
        ("AgentUpdated", {"agent_id": ann, "email": None, "name": None, "role": None,
                          "active": True}),
        ("ApiKeyIssued", {"key_id": key["id"], "name": "ops", "role": "admin",
                          "prefix": key["secret"][:10]}),
        ("ApiKeyRevoked", {"key_id": key["id"]}),
        ("WebhookConfigured", {"url": "https://hooks.example.com/in", "event_types": ["*"],
                               "enabled": True}),
        ("WebhookConfigured", {"url": "https://hooks.example.com/in",
                               "event_types": ["TicketOpened"], "enabled": False}),
        ("SettingsChanged", {"settings": STORED_SETTINGS}),
        ("MailboxCreated", {"mailbox_id": box["id"], "address": "support@acme.test",
                            "name": "Support", "smtp": smtp, "imap": None, "dkim": None}),
        ("MailboxChanged", {"mailbox_id": box["id"], "name": "Help", "smtp": smtp,
                            "imap": imap, "smtp_password_changed": False,
                            "imap_password_changed": True, "dkim": None,
                            "dkim_key_changed": False}),
        ("MailboxChanged", {"mailbox_id": box["id"], "name": "Help", "smtp": None,
                            "imap": imap, "smtp_password_changed": False,
                            "imap_password_changed": False, "dkim": None,
                            "dkim_key_changed": False}),
        ("MailboxDeleted", {"mailbox_id": box["id"], "address": "support@acme.test"}),
    ]
    assert all(set(e["data"]) >= {"at"} for e in r.json()["data"])
    assert "s" * 16 not in r.text and "p" * 12 not in r.text and "q" * 12 not in r.text
