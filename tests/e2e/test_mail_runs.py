"""A run of mails taken in together (``take_in_all``: one transaction, its openings'
look-ups and rows batched) writes what the same mails taken in one by one
(``take_in``) write: the same tickets, contacts, messages, files (sealed to their
requester, a blob shared with the one a known contact holds already), mail rows and
threads; and the run taken in again does nothing twice."""

from __future__ import annotations

import base64
import re
import uuid
from datetime import UTC, datetime
from typing import Any

from api.root import file_storages
from eventstore.store import UnitOfWork
from handlers import mail_in
from tests.e2e.conftest import auth
from tests.support.mail import corpus, make_mailbox, owner_fetch

AT = datetime(2026, 12, 2, 10, 0, tzinfo=UTC)
PDF = b"%PDF-1.4 the same invoice in two mails\n" * 20
_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
                   r"|[0-9a-f]{64}")
"""Ids, and the hashes of each tenant's own raw mails (their addresses differ)."""
_LETTERS = str.maketrans("0123456789", "ghijklmnop")


def _tag() -> str:
    """A tenant's own word in its addresses: letters only, so the search parser reads it
    as one word (a hex tag such as ``c722e922`` is read as ``c72`` and the number
    ``2e922``, which the comparison could not leave out)."""
    return uuid.uuid4().hex[:8].translate(_LETTERS)


def _mail(sender: str, message_id: str, subject: str, *, cc: str | None = None,
          reply_to: str | None = None, file: bytes | None = None) -> bytes:
    head = [f"From: {sender}", "To: support@acme.test", f"Subject: {subject}",
            f"Message-ID: <{message_id}>", "Date: Wed, 02 Dec 2026 10:00:00 +0000"]
    if cc:
        head.append(f"Cc: {cc}")
    if reply_to:
        head.append(f"In-Reply-To: <{reply_to}>")
    text = f"Text of {subject}.\r\n"
    if file is None:
        return ("\r\n".join([*head, "Content-Type: text/plain; charset=utf-8"])
                + "\r\n\r\n" + text).encode()
    body = base64.encodebytes(file).decode().replace("\n", "\r\n")
    return ("\r\n".join([*head, "MIME-Version: 1.0",
                         'Content-Type: multipart/mixed; boundary="b1"'])
            + "\r\n\r\n--b1\r\nContent-Type: text/plain; charset=utf-8\r\n\r\n" + text
            + "--b1\r\nContent-Type: application/pdf\r\n"
              'Content-Disposition: attachment; filename="invoice.pdf"\r\n'
              "Content-Transfer-Encoding: base64\r\n\r\n" + body + "--b1--\r\n").encode()


def _mails(tag: str) -> tuple[bytes, list[bytes]]:
    """The first mail (alone: it makes a known contact holding the PDF), then a run."""
    first = _mail(f"Known <known.{tag}@example.com>", f"first.{tag}@example.com",
                  "Invoice question", cc=f"copied.{tag}@example.com", file=PDF)
    return first, [
        _mail(f"Known <known.{tag}@example.com>", f"again.{tag}@example.com",
              "Second invoice", file=PDF),
        _mail(f"New One <new1.{tag}@example.com>", f"new1.{tag}@example.com",
              "A new customer", cc=f"boss.{tag}@example.com", file=b"GIF89a" + PDF),
        _mail(f"new2.{tag}@example.com", f"new2.{tag}@example.com", "Text only"),
        corpus("auto_reply.eml").replace(b"auto-0001@example.com",
                                         f"auto.{tag}@example.com".encode()),
        _mail(f"copied.{tag}@example.com", f"reply.{tag}@example.com", "Re: Invoice question",
              reply_to=f"first.{tag}@example.com"),
    ]


async def _written(db: Any, tenant: Any, tag: str) -> dict[str, Any]:
    """What the tenant holds, with its ids and tags left out, to compare two tenants."""
    def plain(value: Any) -> Any:
        if isinstance(value, str):
            return value.replace(f".{tag}@", ".@")
        if isinstance(value, list):
            return sorted(plain(v) for v in value)
        return value

    def rows(records: list[Any]) -> list[tuple[Any, ...]]:
        return sorted((tuple(plain(v) for v in r.values()) for r in records), key=repr)

    tickets = await owner_fetch(db, """
        SELECT t.subject, c.email, (SELECT count(*) FROM messages m
                                     WHERE m.tenant_id = t.tenant_id AND m.ticket_id = t.id)
                                   AS messages,
               (SELECT count(*) FROM mail_threads h
                 WHERE h.tenant_id = t.tenant_id AND h.ticket_id = t.id) AS threads,
               (SELECT count(*) FROM jobs j WHERE j.tenant_id = t.tenant_id
                   AND j.dedupe_key LIKE 'sla:' || t.id || ':%') AS timers
          FROM tickets t JOIN contacts c ON c.tenant_id = t.tenant_id AND c.id = t.contact_id
         WHERE t.tenant_id = $1""", tenant)
    files = await owner_fetch(db, """
        SELECT t.subject, u.name, u.size, b.subject_id = t.contact_id AS sealed_to_requester
          FROM uploads u JOIN tickets t ON t.tenant_id = u.tenant_id AND t.id = u.ticket_id
          JOIN file_blobs b ON b.tenant_id = u.tenant_id AND b.id = u.blob_id
         WHERE u.tenant_id = $1""", tenant)
    mails = await owner_fetch(db, """
        SELECT m.rfc_message_id, m.from_address, m.to_addresses, m.cc_addresses, m.outcome,
               m.reason, t.subject
          FROM mail_messages m LEFT JOIN tickets t
            ON t.tenant_id = m.tenant_id AND t.id = m.ticket_id
         WHERE m.tenant_id = $1""", tenant)
    contacts = await owner_fetch(db, "SELECT email FROM contacts WHERE tenant_id = $1", tenant)
    events = await owner_fetch(db, "SELECT type, count(*) AS n FROM events "
                                   "WHERE tenant_id = $1 GROUP BY type", tenant)
    # The read models whole (a run writes its new tickets' rows a statement a table,
    # projections/inline.py ``write_new_tickets``): every column, ids left out.
    models = {}
    for table in ("tickets", "ticket_versions", "messages", "search_documents",
                  "ticket_contacts"):
        # The tag is a word of its own in the search vectors, sorted among the others
        # (first, last or between two).
        models[table] = sorted(
            re.sub(rf"'{tag}':[0-9A-D,]+ | '{tag}':[0-9A-D,]+", "",
                   _UUID.sub("<id>", plain(r["row"])))
            for r in await owner_fetch(db, f"SELECT to_jsonb(x) - 'tenant_id' AS row "
                                           f"FROM {table} x WHERE tenant_id = $1", tenant))
    return {"tickets": rows(tickets), "files": rows(files), "mails": rows(mails),
            "contacts": rows(contacts), "events": rows(events), "models": models}


async def _nothing(uow: UnitOfWork, i: int) -> None:
    return None


async def test_a_run_writes_what_one_by_one_writes_and_nothing_twice(
        http, db, services, make_tenant) -> None:
    storages = file_storages(services.settings, services.store)
    written = []
    for by_run in (True, False):
        tenant = await make_tenant(f"Runs {by_run}")
        box = await make_mailbox(http, auth(tenant.admin_key))
        tag = _tag()
        first, run = _mails(tag)
        taken = await mail_in.take_in(services.store, storages, tenant.tenant_id, box["id"],
                                      first, AT)
        assert taken.outcome == "ticket"
        if by_run:
            outcomes = [t.outcome for t in await mail_in.take_in_all(
                services.store, storages, tenant.tenant_id, box["id"], run, lambda: AT,
                checkpoint=_nothing)]
        else:
            outcomes = [(await mail_in.take_in(services.store, storages, tenant.tenant_id,
                                               box["id"], raw, AT)).outcome for raw in run]
        assert outcomes == ["ticket", "ticket", "ticket", "ignored", "reply"]
        written.append(await _written(db, tenant.tenant_id, tag))
        # Settled as a run (one transaction), not one by one after a failed run.
        [row] = await owner_fetch(db, """
            SELECT count(DISTINCT xmin::text) AS transactions FROM mail_messages
             WHERE tenant_id = $1 AND rfc_message_id NOT LIKE 'first.%'""", tenant.tenant_id)
        assert row["transactions"] == (1 if by_run else len(run))
        if by_run:
            # The known contact's second copy of the PDF shares the blob of its first.
            [shared] = await owner_fetch(db, """
                SELECT count(*) AS uploads, count(DISTINCT u.blob_id) AS blobs
                  FROM uploads u WHERE u.tenant_id = $1 AND u.name = 'invoice.pdf'
                   AND u.sha256 = sha256($2::bytea)""", tenant.tenant_id, PDF)
            assert (shared["uploads"], shared["blobs"]) == (2, 1)
            again = await mail_in.take_in_all(
                services.store, storages, tenant.tenant_id, box["id"], [first, *run],
                lambda: AT, checkpoint=_nothing)
            assert {t.outcome for t in again} == {"duplicate"}
            assert await _written(db, tenant.tenant_id, tag) == written[0]
    by_run_written, one_by_one = written
    for table, got in by_run_written["models"].items():
        want = one_by_one["models"][table]
        assert got == want, (table, sorted(set(got) - set(want)), sorted(set(want) - set(got)))
    assert by_run_written == one_by_one
    assert len(by_run_written["tickets"]) == 4 and len(by_run_written["mails"]) == 6
    assert [n for t, n in by_run_written["events"] if t == "ContactCreated"] == [3]


async def test_a_parser_process_that_died_is_replaced_and_loses_no_mail(
        http, services, make_tenant) -> None:
    storages = file_storages(services.settings, services.store)
    tenant = await make_tenant("Parser died")
    box = await make_mailbox(http, auth(tenant.admin_key))
    tag = _tag()
    first, run = _mails(tag)
    taken = await mail_in.take_in_all(services.store, storages, tenant.tenant_id, box["id"],
                                      [first], lambda: AT, checkpoint=_nothing)
    assert [t.outcome for t in taken] == ["ticket"]
    [pool] = mail_in._PARSER
    processes = list(pool._processes.values())  # type: ignore[union-attr]
    assert processes, "the run was parsed in a process of its own"
    for process in processes:
        process.kill()
        process.join(10)
    # This run is parsed in a thread (the pool broke); the next one in a new process.
    taken = await mail_in.take_in_all(services.store, storages, tenant.tenant_id, box["id"],
                                      run, lambda: AT, checkpoint=_nothing)
    assert [t.outcome for t in taken] == ["ticket", "ticket", "ticket", "ignored", "reply"]
    assert mail_in._PARSER == [] or mail_in._PARSER[0] is not pool
    again = await mail_in.take_in_all(services.store, storages, tenant.tenant_id, box["id"],
                                      [first, *run], lambda: AT, checkpoint=_nothing)
    assert {t.outcome for t in again} == {"duplicate"}
    assert mail_in._PARSER and mail_in._PARSER[0] is not pool
