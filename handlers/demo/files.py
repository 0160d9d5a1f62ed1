"""The demo's files: a few tickets get a screenshot in a public reply and a log in an
internal note, uploaded and attached through the same handlers as the API
(handlers/attachments.py), kept in Postgres."""

from __future__ import annotations

import struct
import uuid
import zlib
from collections.abc import AsyncIterator
from datetime import datetime

from domain.ids import MessageId, TenantId, TicketId
from domain.values import Actor, ActorKind, Visibility
from eventstore.blobs import PostgresStorage
from eventstore.store import EventStore
from eventstore.types import StoreActor
from handlers import attachments
from handlers.tickets import PostMessage, post_message

TICKETS = 3
"""How many of the tenant's open tickets get files."""

LOG = (b"2026-05-30T09:14:02Z ERROR sync: upstream answered 502 after 30.0 s\n"
       b"2026-05-30T09:14:32Z WARN  sync: retrying (attempt 2 of 5)\n"
       b"2026-05-30T09:15:02Z INFO  sync: done, 1,204 records\n")


def screenshot(width: int = 160, height: int = 100) -> bytes:
    """A small PNG: a window with a title bar and a highlighted field (drawn here, so
    the demo needs no image file)."""
    rows = []
    for y in range(height):
        row = bytearray([0])  # filter: none
        for x in range(width):
            if y < 14:
                pixel = (40, 90, 160)
            elif 40 <= y < 56 and 20 <= x < width - 20:
                pixel = (255, 214, 102)
            else:
                pixel = (245, 247, 250)
            row += bytes(pixel)
        rows.append(bytes(row))

    def chunk(kind: bytes, data: bytes) -> bytes:
        return (struct.pack(">I", len(data)) + kind + data
                + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF))

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header)
            + chunk(b"IDAT", zlib.compress(b"".join(rows))) + chunk(b"IEND", b""))


async def _once(data: bytes) -> AsyncIterator[bytes]:
    yield data


async def attach_demo_files(store: EventStore, tenant_id: TenantId, key: StoreActor,
                            agent_id: uuid.UUID, at: datetime) -> int:
    """Files on up to ``TICKETS`` open tickets, by the agent ``agent_id`` (whose key
    is ``key``); how many tickets got them. None without sealing (a store with no
    keyring keeps no files)."""
    if store.keyring is None:
        return 0
    pg = PostgresStorage(store)
    storages = attachments.Storages(new=pg, by_kind={"postgres": pg})
    async with store.unit_of_work(tenant_id, key, readonly=True) as uow:
        tickets = [r["id"] for r in await uow.conn.fetch(
            "SELECT id FROM tickets WHERE tenant_id = $1 AND state IN ('open', 'pending') "
            "ORDER BY created_at DESC, id LIMIT $2", tenant_id, TICKETS)]
    author = Actor(kind=ActorKind.AGENT, id=str(agent_id))
    for ticket in tickets:
        for name, data, visibility, body in (
                ("settings.png", screenshot(), Visibility.PUBLIC,
                 "Here is the setting to change, highlighted."),
                ("sync.log", LOG, Visibility.INTERNAL, "The customer's sync log.")):
            command = attachments.ReceiveFile(name=name, declared_type=None, uploader=key,
                                              at=at)
            found = await attachments.check_upload(store, tenant_id, command, len(data))
            received = await attachments.receive(store, storages, tenant_id, command,
                                                 _once(data), found)
            async with store.unit_of_work(tenant_id, key) as uow:
                done = await attachments.record_upload(uow, received, command)
                await post_message(uow, PostMessage(
                    ticket_id=TicketId(ticket), message_id=MessageId(uuid.uuid4()),
                    body=body, visibility=visibility, at=at, author=author,
                    attachments=(uuid.UUID(str(done["id"])),)))
    return len(tickets)
