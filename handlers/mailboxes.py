"""A tenant's mailboxes: the addresses mail comes in by and goes out from.

A mailbox has an address, an inbound secret (what ``POST /v1/inbound/mail/{mailbox}``
must be given; minted here, shown once, kept only as its SHA-256 like an API key's)
and, optionally, outbound SMTP. Without SMTP it only takes mail in; with it, public
staff replies on its tickets are mailed (``handlers.mail_out``). The SMTP password is
sealed by the key-encryption key (``Keyring.wrap``, bound to the tenant and the
mailbox) and never returned; so are the IMAP password and the DKIM private key, which
is checked when saved (domain/mail_dkim.py: it must sign a mail that verifies against
the DNS record it implies, which the mailbox shows). Nothing here reaches a mail
server: a mailbox whose server is down or wrong is found out when it is used, and says
so in ``last_error``.

Mailboxes are configuration of the tenant, like its settings and webhook: each
creation, change and deletion is an event on the tenant stream
(``MailboxCreated``, ``MailboxChanged``, ``MailboxDeleted``) in the row's own
transaction, holding what the API shows of it (never a secret; a change says whether
a new password was given), so the tenant's audit trail shows who pointed its mail
where and when. Only a mailbox that never took in or sent mail can be deleted: its
threads, mail rows, quarantine and notifications name it otherwise (``Conflict``
``mailbox_in_use``; removing its SMTP and IMAP stops it).
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import uuid
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any
from uuid import UUID

import asyncpg

from domain import mail_dkim
from domain.events import MailboxChanged, MailboxCreated, MailboxDeleted
from domain.ids import TenantId
from domain.mail_dkim import DkimKey
from eventstore.keys import Keyring
from eventstore.sqlfile import load_queries
from eventstore.store import UnitOfWork
from handlers.errors import Conflict, Invalid, Missing, expect_version
from handlers.tenant_events import record
from scheduler.tenant_seed import ensure_tenant_jobs

Q = load_queries(Path(__file__).with_name("mail.sql"))

POLL_KIND = "mail.poll"
"""The tenant's IMAP poll job (handlers/mail_poll.py), made with its first IMAP mailbox."""
IDLE_KIND = "mail.idle"
"""Its IDLE watch (handlers/mail_idle.py), made with the poll job."""
IMAP_JOBS = [(POLL_KIND, POLL_KIND), (IDLE_KIND, IDLE_KIND)]
SECRET_PREFIX = "hdmail_"
SECURITY = ("none", "starttls", "tls")


@dataclass(frozen=True, slots=True)
class Smtp:
    """Outbound SMTP. ``password`` None on a change keeps the current one, unless
    ``clear_password`` (the stored one is forgotten: no password)."""

    host: str
    port: int
    security: str
    username: str | None = None
    password: str | None = None
    clear_password: bool = False

    def public(self) -> dict[str, Any]:
        return {"host": self.host, "port": self.port, "security": self.security,
                "username": self.username}


@dataclass(frozen=True, slots=True)
class Imap:
    """Inbound IMAP: a server, a folder, credentials. ``password`` None on a change
    keeps the current one, unless ``clear_password``."""

    host: str
    port: int
    security: str
    username: str
    password: str | None = None
    folder: str = "INBOX"
    clear_password: bool = False

    def public(self) -> dict[str, Any]:
        return {"host": self.host, "port": self.port, "security": self.security,
                "username": self.username, "folder": self.folder}


@dataclass(frozen=True, slots=True)
class Dkim:
    """DKIM signing of outbound mail. ``private_key`` (PEM) None on a change keeps the
    current one; ``clear_key`` (a key asked to be forgotten while signing stays) is
    refused, since signing needs one."""

    selector: str
    domain: str
    private_key: str | None = None
    clear_key: bool = False


@dataclass(frozen=True, slots=True)
class CreateMailbox:
    address: str
    name: str | None
    smtp: Smtp | None
    at: datetime
    imap: Imap | None = None
    dkim: Dkim | None = None


@dataclass(frozen=True, slots=True)
class ChangeMailbox:
    mailbox_id: UUID
    name: str | None
    smtp: Smtp | None
    clear_smtp: bool
    at: datetime
    imap: Imap | None = None
    clear_imap: bool = False
    dkim: Dkim | None = None
    clear_dkim: bool = False
    expected_version: int | None = None


@dataclass(frozen=True, slots=True)
class ImapAccess:
    """What polling needs: the settings, the opened password, the checkpoint."""

    host: str
    port: int
    security: str
    username: str
    password: str
    folder: str
    uidvalidity: int | None
    last_uid: int


@dataclass(frozen=True, slots=True)
class SmtpAccess:
    """What sending needs: the settings and the opened password."""

    host: str
    port: int
    security: str
    username: str | None
    password: str | None
    dkim: DkimKey | None = None
    """The key outbound mail is signed with (None: unsigned)."""


def hash_secret(secret: str) -> bytes:
    return hashlib.sha256(secret.encode("utf-8")).digest()


def secret_matches(secret: str, stored: bytes) -> bool:
    return hmac.compare_digest(hash_secret(secret), bytes(stored))


def mailbox_document(row: Any) -> dict[str, Any]:
    """A mailbox as the API shows it: never a secret, only whether each is stored (a
    console shows "stored" or "not set" beside a write-only input)."""
    smtp, imap, dkim = row["smtp"], row["imap"], row["dkim"]
    return {"id": row["id"], "address": row["address"], "name": row["name"],
            "smtp": None if smtp is None else {
                **smtp, "password_set": row["smtp_password_set"]},
            "imap": None if imap is None else {
                **imap, "password_set": row["imap_password_set"]},
            "dkim": None if dkim is None else {
                **dkim, "private_key_set": row["dkim_key_set"]},
            "status": status_of(row), "last_error": row["last_error"],
            "last_error_at": row["last_error_at"], "version": row["version"],
            "created_at": row["created_at"], "updated_at": row["updated_at"]}


def status_of(row: Any) -> str:
    """``degraded`` while its last use failed, else ``ok``."""
    failed, ok = row["last_error_at"], row["last_ok_at"]
    return "degraded" if failed is not None and (ok is None or ok < failed) else "ok"


def _sealed(keyring: Keyring | None, tenant: UUID, mailbox: UUID, password: str | None
            ) -> tuple[bytes | None, str | None]:
    if password is None:
        return None, None
    if keyring is None:
        raise Conflict("files_unavailable", "secrets need sealing, which this store lacks")
    return keyring.wrap(tenant, mailbox, password.encode("utf-8")), keyring.fingerprint


def _server_changed(uow: UnitOfWork, mailbox_id: UUID, clear: bool, given: Smtp | Imap | None,
                    current: tuple[Any, Any, Any]) -> tuple[Any, Any, Any]:
    """A server's document, sealed password and key after a change: cleared, replaced
    (a password given is sealed anew, one cleared forgotten, else the current one is
    kept) or as it is."""
    if clear:
        return None, None, None
    if given is None:
        return current
    _, sealed, kek = current
    if given.password is not None:
        sealed, kek = _sealed(uow.keyring, uow.tenant_id, mailbox_id, given.password)
    elif given.clear_password:
        sealed, kek = None, None
    return given.public(), sealed, kek


def _dkim_checked(address: str, given: Dkim, current_key: str | None) -> DkimKey:
    """``given`` checked (domain/mail_dkim.py), with ``current_key`` when it names no
    key; ``Invalid`` (422) naming the field at fault."""
    key = given.private_key if given.private_key is not None else current_key
    if given.clear_key:
        raise Invalid("validation_failed", "signing needs its private_key: set dkim to null "
                      "to stop signing", field="dkim.private_key", kind="missing")
    if key is None:
        raise Invalid("validation_failed", "dkim needs a private_key", field="dkim.private_key",
                      kind="missing")
    try:
        return mail_dkim.check_key(address, given.selector, given.domain, key)
    except mail_dkim.DkimInvalid as exc:
        raise Invalid("validation_failed", exc.message, field=f"dkim.{exc.field}") from exc


def _dkim_sealed(uow: UnitOfWork, mailbox_id: UUID, key: DkimKey | None
                 ) -> tuple[dict[str, Any] | None, bytes | None, str | None]:
    if key is None:
        return None, None, None
    sealed, kek = _sealed(uow.keyring, uow.tenant_id, mailbox_id, key.private_key.decode())
    return key.public(), sealed, kek


def _opened(keyring: Keyring | None, tenant_id: UUID, mailbox_id: UUID, sealed: Any,
            kek: str | None) -> str | None:
    if sealed is None:
        return None
    assert keyring is not None
    return keyring.unwrap(tenant_id, mailbox_id, bytes(sealed), kek).decode("utf-8")


async def create_mailbox(uow: UnitOfWork, command: CreateMailbox
                         ) -> tuple[dict[str, Any], str]:
    """The new mailbox's document and its inbound secret (shown this once)."""
    mailbox_id = uuid.uuid4()
    secret = SECRET_PREFIX + secrets.token_urlsafe(32)
    smtp = command.smtp
    sealed, kek = _sealed(uow.keyring, uow.tenant_id, mailbox_id,
                          None if smtp is None else smtp.password)
    imap = command.imap
    imap_sealed, imap_kek = _sealed(uow.keyring, uow.tenant_id, mailbox_id,
                                    None if imap is None else imap.password)
    dkim = _dkim_sealed(uow, mailbox_id, None if command.dkim is None else _dkim_checked(
        command.address, command.dkim, None))
    row = await uow.conn.fetchrow(
        Q["mailbox_insert"], uow.tenant_id, mailbox_id, command.address, command.name,
        hash_secret(secret), None if smtp is None else smtp.public(), sealed, kek, command.at,
        None if imap is None else imap.public(), imap_sealed, imap_kek, *dkim)
    if row is None:
        raise Conflict("mailbox_exists", f"the tenant has a mailbox {command.address} already")
    if imap is not None:
        await ensure_tenant_jobs(uow.conn, uow.tenant_id, IMAP_JOBS, command.at)
    await record(uow, MailboxCreated(
        mailbox_id=mailbox_id, address=row["address"], name=row["name"],
        smtp=None if row["smtp"] is None else dict(row["smtp"]),
        imap=None if row["imap"] is None else dict(row["imap"]),
        dkim=None if row["dkim"] is None else dict(row["dkim"]), at=command.at))
    return mailbox_document(row), secret


async def change_mailbox(uow: UnitOfWork, command: ChangeMailbox) -> dict[str, Any]:
    current = await uow.conn.fetchrow(Q["mailbox_lock"], uow.tenant_id, command.mailbox_id)
    if current is None:
        raise Missing("mailbox_not_found", f"no mailbox {command.mailbox_id}")
    expect_version("mailbox", current["version"], command.expected_version)
    smtp_doc, sealed, kek = _server_changed(
        uow, command.mailbox_id, command.clear_smtp, command.smtp,
        (current["smtp"], current["smtp_password"], current["kek"]))
    imap_doc, imap_sealed, imap_kek = _server_changed(
        uow, command.mailbox_id, command.clear_imap, command.imap,
        (current["imap"], current["imap_password"], current["imap_kek"]))
    dkim: tuple[Any, Any, Any] = (current["dkim"], current["dkim_key"], current["dkim_kek"])
    if command.clear_dkim:
        dkim = (None, None, None)
    elif command.dkim is not None:
        kept = None if command.dkim.private_key is not None else _opened(
            uow.keyring, uow.tenant_id, command.mailbox_id, current["dkim_key"],
            current["dkim_kek"])
        dkim = _dkim_sealed(uow, command.mailbox_id,
                            _dkim_checked(current["address"], command.dkim, kept))
    name = current["name"] if command.name is None else command.name
    row = await uow.conn.fetchrow(Q["mailbox_update"], uow.tenant_id, command.mailbox_id,
                                  name, smtp_doc, sealed, kek, command.at, imap_doc,
                                  imap_sealed, imap_kek, *dkim)
    assert row is not None
    if imap_doc is not None:
        await ensure_tenant_jobs(uow.conn, uow.tenant_id, IMAP_JOBS, command.at)
    await record(uow, MailboxChanged(
        mailbox_id=command.mailbox_id, name=row["name"],
        smtp=None if row["smtp"] is None else dict(row["smtp"]),
        imap=None if row["imap"] is None else dict(row["imap"]),
        smtp_password_changed=_password_changed(command.clear_smtp, command.smtp),
        imap_password_changed=_password_changed(command.clear_imap, command.imap),
        dkim=None if row["dkim"] is None else dict(row["dkim"]),
        dkim_key_changed=(not command.clear_dkim and command.dkim is not None
                          and command.dkim.private_key is not None), at=command.at))
    return mailbox_document(row)


def _password_changed(clear: bool, given: Smtp | Imap | None) -> bool:
    """Whether a change gave a server a new password or forgot its stored one."""
    return not clear and given is not None and (given.password is not None
                                                or given.clear_password)


async def delete_mailbox(uow: UnitOfWork, mailbox_id: UUID, at: datetime,
                         expected_version: int | None = None) -> dict[str, Any]:
    """Delete a mailbox nothing names (module docstring); what it was."""
    current = await uow.conn.fetchrow(Q["mailbox_lock"], uow.tenant_id, mailbox_id)
    if current is None:
        raise Missing("mailbox_not_found", f"no mailbox {mailbox_id}")
    expect_version("mailbox", current["version"], expected_version)
    # Mail taken in for it meanwhile waits on the row lock, then finds no mailbox.
    if await uow.conn.fetchval(Q["mailbox_used"], uow.tenant_id, mailbox_id):
        raise Conflict("mailbox_in_use", "the mailbox took in or sent mail, which names it; "
                       "remove its smtp and imap to stop it instead")
    row = await uow.conn.fetchrow(Q["mailbox_delete"], uow.tenant_id, mailbox_id)
    assert row is not None
    await record(uow, MailboxDeleted(mailbox_id=mailbox_id, address=row["address"], at=at))
    return mailbox_document(row)


async def get_mailbox(uow: UnitOfWork, mailbox_id: UUID) -> dict[str, Any] | None:
    conn, tenant_id = uow.conn, uow.tenant_id
    row = await conn.fetchrow(Q["mailbox_get"], tenant_id, mailbox_id)
    return None if row is None else mailbox_document(row)


async def list_mailboxes(uow: UnitOfWork, after: tuple[datetime, UUID] | None, limit: int
                         ) -> list[dict[str, Any]]:
    conn, tenant_id = uow.conn, uow.tenant_id
    at, last = after if after is not None else (None, None)
    rows = await conn.fetch(Q["mailbox_page"], tenant_id, at, last, limit)
    return [mailbox_document(r) for r in rows]


async def smtp_access(uow: UnitOfWork, mailbox_id: UUID) -> tuple[str, SmtpAccess | None]:
    """The mailbox's address and its SMTP (None: it sends nothing), its secrets opened
    with the unit of work's keyring."""
    keyring, tenant_id = uow.keyring, uow.tenant_id
    row = await uow.conn.fetchrow(Q["mailbox_get"], tenant_id, mailbox_id)
    if row is None:
        raise Missing("mailbox_not_found", f"no mailbox {mailbox_id}")
    smtp = row["smtp"]
    if smtp is None:
        return row["address"], None
    password = _opened(keyring, tenant_id, mailbox_id, row["smtp_password"], row["kek"])
    dkim = None
    pem = _opened(keyring, tenant_id, mailbox_id, row["dkim_key"], row["dkim_kek"])
    if row["dkim"] is not None and pem is not None:
        doc = row["dkim"]
        dkim = DkimKey(doc["selector"], doc["domain"], pem.encode(), doc["algorithm"],
                       doc["dns_record"])
    return row["address"], SmtpAccess(host=smtp["host"], port=int(smtp["port"]),
                                      security=smtp["security"],
                                      username=smtp.get("username"), password=password,
                                      dkim=dkim)


async def imap_access(uow: UnitOfWork, mailbox_id: UUID) -> ImapAccess | None:
    """The mailbox's IMAP and checkpoint (None: it is not polled), its password opened
    with the unit of work's keyring."""
    keyring, tenant_id = uow.keyring, uow.tenant_id
    row = await uow.conn.fetchrow(Q["mailbox_get"], tenant_id, mailbox_id)
    if row is None or row["imap"] is None:
        return None
    imap = row["imap"]
    password = ""
    if row["imap_password"] is not None:
        assert keyring is not None
        password = keyring.unwrap(tenant_id, mailbox_id, bytes(row["imap_password"]),
                                  row["imap_kek"]).decode("utf-8")
    return ImapAccess(host=imap["host"], port=int(imap["port"]), security=imap["security"],
                      username=imap["username"], password=password,
                      folder=imap.get("folder") or "INBOX",
                      uidvalidity=row["imap_uidvalidity"], last_uid=int(row["imap_last_uid"]))


async def inbound_tenant(conn: asyncpg.Connection, mailbox_id: UUID, secret: str
                         ) -> TenantId | None:
    """The tenant of the mailbox ``secret`` opens, else None (an unknown mailbox and a
    wrong secret look alike)."""
    row = await conn.fetchrow(Q["mailbox_lookup"], mailbox_id)
    if row is None or not secret_matches(secret, row["inbound_secret_hash"]):
        return None
    return TenantId(row["tenant_id"])


async def mail_health(conn: asyncpg.Connection) -> tuple[int, int]:
    """(mailboxes, mailboxes whose last use failed), over every tenant."""
    row = await conn.fetchrow(Q["mail_health"])
    assert row is not None
    return int(row["mailboxes"]), int(row["failing"])


async def record_use(conn: asyncpg.Connection, tenant_id: TenantId, mailbox_id: UUID,
                     at: datetime, error: str | None) -> None:
    """Note that the mailbox's server answered (``error`` None) or failed."""
    if error is None:
        await conn.execute(Q["mailbox_ok"], tenant_id, mailbox_id, at)
    else:
        await conn.execute(Q["mailbox_failed"], tenant_id, mailbox_id, error[:500], at)


__all__ = [
    "SECURITY",
    "ChangeMailbox",
    "CreateMailbox",
    "Dkim",
    "Imap",
    "ImapAccess",
    "Smtp",
    "SmtpAccess",
    "change_mailbox",
    "create_mailbox",
    "delete_mailbox",
    "get_mailbox",
    "imap_access",
    "inbound_tenant",
    "list_mailboxes",
    "mail_health",
    "mailbox_document",
    "record_use",
    "smtp_access",
]
