"""DKIM signing of outbound mail: a mailbox's key is checked when saved (422 naming the
field at fault), sealed and never shown; a reply that reaches the session's real SMTP
server carries a signature that dkimpy verifies against the record the mailbox shows
(handed to it as its DNS, so no DNS is asked), and that fails once the mail changes."""

from __future__ import annotations

import uuid

import dkim
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from domain.clock import ManualClock
from tests.e2e.conftest import auth
from tests.support.mail import inbound, make_mailbox, owner_fetch, run_mail_jobs, smtp_at, soon
from tests.support.smtp import SmtpServer


def _pem(bits: int = 2048) -> str:
    key = rsa.generate_private_key(public_exponent=65537, key_size=bits)
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption()).decode()


async def test_replies_are_signed_with_the_mailbox_dkim_key(
        http, db, services, tenant, owner, smtp_server: SmtpServer) -> None:
    admin = auth(tenant.admin_key)
    pem = _pem()
    for dkim_in, field in (
            ({"selector": "desk", "domain": "acme.test", "private_key": "not a key"},
             "private_key"),
            ({"selector": "desk", "domain": "other.test", "private_key": pem}, "domain"),
            ({"selector": "no such", "domain": "acme.test", "private_key": pem}, "selector"),
            ({"selector": "desk", "domain": "acme.test", "private_key": _pem(1024)[:-60]},
             "private_key"),
            ({"selector": "desk", "domain": "acme.test"}, "private_key")):
        r = await http.post("/v1/mailboxes", headers=admin, json={
            "address": "support@acme.test", "smtp": smtp_at(smtp_server.port),
            "dkim": dkim_in})
        assert r.status_code == 422, r.text
        assert r.json()["code"] == "validation_failed" and field in r.text, r.text
        assert "PRIVATE KEY" not in r.text

    box = await make_mailbox(http, admin, smtp=smtp_at(smtp_server.port),
                             dkim={"selector": "desk", "domain": "acme.test",
                                   "private_key": pem})
    shown = box["dkim"]
    assert shown["dns_name"] == "desk._domainkey.acme.test"
    assert shown["dns_record"].startswith("v=DKIM1; k=rsa; p=")
    assert shown["algorithm"] == "rsa-sha256" and "private_key" not in shown
    assert shown["private_key_set"] is True
    got = await http.get(f"/v1/mailboxes/{box['id']}", headers=admin)
    assert got.json()["dkim"] == shown and "PRIVATE KEY" not in got.text
    [row] = await owner_fetch(db, "SELECT dkim_key, dkim_kek FROM mailboxes WHERE id = $1",
                              uuid.UUID(box["id"]))
    assert row["dkim_kek"] and b"PRIVATE KEY" not in bytes(row["dkim_key"])
    # A change of selector without a key keeps the key; a bad one is refused, as at first.
    r = await http.patch(f"/v1/mailboxes/{box['id']}", headers=admin,
                         json={"dkim": {"selector": "desk2", "domain": "acme.test"}})
    assert r.status_code == 200, r.text
    assert r.json()["dkim"]["dns_record"] == shown["dns_record"]
    assert r.json()["dkim"]["private_key_set"] is True
    # The key cannot be forgotten while signing stays: dkim null stops signing.
    r = await http.patch(f"/v1/mailboxes/{box['id']}", headers=admin, json={
        "dkim": {"selector": "desk", "domain": "acme.test", "private_key": None}})
    assert r.status_code == 422 and r.json()["code"] == "validation_failed", r.text
    assert "dkim: null" in r.text or "dkim to null" in r.text
    r = await http.patch(f"/v1/mailboxes/{box['id']}", headers=admin, json={
        "dkim": {"selector": "desk", "domain": "acme.test", "private_key": "x"}})
    assert r.status_code == 422 and "private_key" in r.text
    record = shown["dns_record"]

    ann = f"ann.{uuid.uuid4().hex[:8]}@example.com"
    opened = await inbound(http, box, (
        f"From: Ann <{ann}>\r\nTo: support@acme.test\r\n"
        "Subject: Signed, please\r\nMessage-ID: <dkim-open@example.com>\r\n\r\n"
        "Is this signed?\r\n").encode())
    ticket = opened["ticket_id"]
    agent_id = await owner.agent(tenant.tenant_id)
    agent = auth(await owner.key(tenant.tenant_id, "agent", agent_id))
    r = await http.post(f"/v1/tickets/{ticket}/messages", headers=agent,
                        json={"body": "Yes, signed: caf\u00e9 and all.\n\nAcme"})
    assert r.status_code == 201, r.text

    async def sent() -> bool:
        return any(m["status"] == "sent" for m in (await http.get(
            f"/v1/tickets/{ticket}/mail", headers=admin)).json()["data"])

    await run_mail_jobs(services, ManualClock(soon()), sent)
    [delivered] = smtp_server.to(ann)
    asked: list[bytes] = []

    def dns(name: bytes, timeout: int = 5) -> bytes:
        asked.append(name)
        return record.encode() if name == b"desk2._domainkey.acme.test." else b""

    assert dkim.verify(delivered.data, dnsfunc=dns)
    assert asked == [b"desk2._domainkey.acme.test."]
    signature = delivered.message()["DKIM-Signature"]
    assert "d=acme.test" in signature and "s=desk2" in signature
    assert b"Signed, please" in delivered.data  # the subject, signed
    assert not dkim.verify(delivered.data.replace(b"Signed, please", b"Signed, pleas"),
                           dnsfunc=dns)

    # Signing off: mail goes out unsigned.
    r = await http.patch(f"/v1/mailboxes/{box['id']}", headers=admin, json={"dkim": None})
    assert r.status_code == 200 and r.json()["dkim"] is None
    # The tenant's stream says who set what, never the key.
    tenant_events = (await http.get("/v1/events", headers=admin, params={
        "stream_id": str(tenant.tenant_id), "limit": 100})).json()["data"]
    told = [(e["type"], (e["data"].get("dkim") or {}).get("selector"),
             e["data"].get("dkim_key_changed")) for e in tenant_events
            if e["type"].startswith("Mailbox")]
    assert told == [("MailboxCreated", "desk", None), ("MailboxChanged", "desk2", False),
                    ("MailboxChanged", None, False)]
    assert "PRIVATE KEY" not in str(tenant_events)
