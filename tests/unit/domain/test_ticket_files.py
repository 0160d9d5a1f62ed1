"""A ticket lists the files of its public messages, with each message's id: given
these events, the folded state's ``files``."""

from __future__ import annotations

import uuid

from domain.attachment import AttachmentRef, TicketFile
from domain.values import Visibility
from tests.unit.domain.support import AGENT, at, given, open_cmd, reply, state_of


def ref(n: int) -> AttachmentRef:
    return AttachmentRef(id=uuid.UUID(int=n), name=f"f{n}.png", size=n, type="image/png",
                         sha256=f"{n:064x}")


def test_the_opening_and_public_replies_files_are_listed_in_order_notes_are_not() -> None:
    opened = open_cmd(attachments=(ref(1),))
    events = given(opened,
                   reply(at(1), AGENT, Visibility.INTERNAL, n=7).model_copy(
                       update={"attachments": (ref(2),)}),
                   reply(at(2), AGENT, Visibility.PUBLIC, n=8).model_copy(
                       update={"attachments": (ref(3), ref(4))}),
                   reply(at(3), n=9))
    first = events[0].message_id  # type: ignore[attr-defined]
    assert state_of(events).files == (
        TicketFile(message_id=first, **ref(1).model_dump()),
        TicketFile(message_id=uuid.UUID(int=8), **ref(3).model_dump()),
        TicketFile(message_id=uuid.UUID(int=8), **ref(4).model_dump()))
    assert state_of(events[:1]).files == (TicketFile(message_id=first, **ref(1).model_dump()),)
