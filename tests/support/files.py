"""Files driven through the same handlers as the API (handlers/attachments.py): an
upload received into Postgres storage and recorded, then attached by a message."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from datetime import datetime

from domain.ids import MessageId, TenantId, TicketId
from domain.values import Actor, Visibility
from eventstore.blobs import PostgresStorage
from eventstore.store import EventStore
from eventstore.types import StoreActor
from handlers import attachments
from handlers.tickets import PostMessage, post_message


def storages(store: EventStore) -> attachments.Storages:
    """Postgres storage only, as a process with no FILE_STORAGE_DIR has."""
    pg = PostgresStorage(store)
    return attachments.Storages(new=pg, by_kind={"postgres": pg})


async def _body(data: bytes) -> AsyncIterator[bytes]:
    yield data


async def upload(store: EventStore, tenant: TenantId, uploader: StoreActor, data: bytes,
                 name: str, at: datetime) -> uuid.UUID:
    """Receive ``data`` as an upload of ``uploader``; its id."""
    command = attachments.ReceiveFile(name=name, declared_type=None, uploader=uploader, at=at)
    found = await attachments.check_upload(store, tenant, command, len(data))
    received = await attachments.receive(store, storages(store), tenant, command,
                                         _body(data), found)
    async with store.unit_of_work(tenant, uploader) as uow:
        done = await attachments.record_upload(uow, received, command)
    return uuid.UUID(str(done["id"]))


async def post_file(store: EventStore, tenant: TenantId, actor: StoreActor, author: Actor,
                    ticket: TicketId, data: bytes, at: datetime,
                    visibility: Visibility = Visibility.PUBLIC, body: str = "a file",
                    message_id: MessageId | None = None) -> tuple[uuid.UUID, uuid.UUID]:
    """Upload ``data`` and post it on ``ticket`` in a message of ``author``; the
    upload's id and its blob's."""
    upload_id = await upload(store, tenant, actor, data, "file.bin", at)
    async with store.unit_of_work(tenant, actor) as uow:
        await post_message(uow, PostMessage(
            ticket_id=ticket, message_id=message_id or MessageId(uuid.uuid4()), body=body,
            visibility=visibility, at=at, author=author, attachments=(upload_id,)))
        blob = await uow.conn.fetchval("SELECT blob_id FROM uploads WHERE tenant_id = $1 "
                                       "AND id = $2", tenant, upload_id)
    return upload_id, blob
