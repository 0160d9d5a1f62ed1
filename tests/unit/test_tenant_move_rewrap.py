"""Values the key-encryption key wraps itself cross a move wrapped by the transport
key, and arrive wrapped by the target's; a value wrapped by something else (a file's
key under its contact's data key) moves as it is."""

from __future__ import annotations

import uuid

from domain.ids import TenantId
from eventstore.keys import Keyring
from handlers.tenant_move import _bytea, _rewrap, _unbytea


def test_kek_wrapped_values_are_wrapped_again_and_others_move_as_they_are():
    tenant = TenantId(uuid.uuid4())
    source, transport, target = Keyring(b"source"), Keyring(b"transport"), Keyring(b"target")
    mailbox = uuid.uuid4()
    row = {"id": str(mailbox), "tenant_id": str(tenant),
           "smtp_password": _bytea(source.wrap(tenant, mailbox, b"smtp secret")),
           "kek": source.fingerprint,
           "imap_password": _bytea(source.wrap(tenant, mailbox, b"imap secret")),
           "imap_kek": source.fingerprint}
    sent = _rewrap("mailboxes", dict(row), tenant, source, transport)
    assert (sent["kek"], sent["imap_kek"]) == (transport.fingerprint, transport.fingerprint)
    came = _rewrap("mailboxes", dict(sent), tenant, transport, target)
    assert came["kek"] == came["imap_kek"] == target.fingerprint
    assert target.unwrap(tenant, mailbox, _unbytea(came["smtp_password"]),
                         came["kek"]) == b"smtp secret"
    assert target.unwrap(tenant, mailbox, _unbytea(came["imap_password"]),
                         came["imap_kek"]) == b"imap secret"

    on_a_ticket = {"id": str(uuid.uuid4()), "wrapped_key": "\\x00ff", "kek": None}
    assert _rewrap("file_blobs", dict(on_a_ticket), tenant, source, transport) == on_a_ticket


def test_slacks_bot_token_and_signing_secret_are_wrapped_again():
    tenant = TenantId(uuid.uuid4())
    source, transport, target = Keyring(b"source"), Keyring(b"transport"), Keyring(b"target")
    connection = uuid.uuid4()
    row = {"id": str(connection), "tenant_id": str(tenant),
           "bot_token": _bytea(source.wrap(tenant, connection, b"xoxb-token")),
           "bot_token_kek": source.fingerprint,
           "signing_secret": _bytea(source.wrap(tenant, connection, b"signing")),
           "signing_secret_kek": source.fingerprint}
    sent = _rewrap("slack_integrations", dict(row), tenant, source, transport)
    came = _rewrap("slack_integrations", sent, tenant, transport, target)
    assert came["bot_token_kek"] == came["signing_secret_kek"] == target.fingerprint
    assert target.unwrap(tenant, connection, _unbytea(came["bot_token"]),
                         came["bot_token_kek"]) == b"xoxb-token"
    assert target.unwrap(tenant, connection, _unbytea(came["signing_secret"]),
                         came["signing_secret_kek"]) == b"signing"


def test_a_notifications_values_and_a_mailboxs_dkim_key_are_wrapped_again():
    tenant = TenantId(uuid.uuid4())
    source, transport = Keyring(b"source"), Keyring(b"transport")
    notice, mailbox = uuid.uuid4(), uuid.uuid4()
    row = {"id": str(notice), "data": _bytea(source.wrap(tenant, notice, b'{"token":"t"}')),
           "kek": source.fingerprint}
    sent = _rewrap("mail_notifications", dict(row), tenant, source, transport)
    assert transport.unwrap(tenant, notice, _unbytea(sent["data"]),
                            sent["kek"]) == b'{"token":"t"}'
    box = {"id": str(mailbox), "dkim_key": _bytea(source.wrap(tenant, mailbox, b"pem")),
           "dkim_kek": source.fingerprint, "smtp_password": None, "kek": None,
           "imap_password": None, "imap_kek": None}
    moved = _rewrap("mailboxes", dict(box), tenant, source, transport)
    assert transport.unwrap(tenant, mailbox, _unbytea(moved["dkim_key"]),
                            moved["dkim_kek"]) == b"pem"
