"""Given events, when a command, then events: the contact aggregate, and a ticket
moving between contacts."""

from __future__ import annotations

import uuid

import pytest

from domain.contact import (
    ContactFields,
    ContactMergedAway,
    CreateContact,
    MergeContact,
    UpdateContact,
    decide_contact,
    email_domain,
    fold_contact,
)
from domain.errors import AlreadyExists, CorruptStream, NotFound, ValidationFailed
from domain.events import ContactCreated, ContactMerged, ContactUpdated, Event
from domain.ids import ContactId, OrganizationId
from domain.ticket.commands import ChangeRequester
from domain.ticket.events import RequesterChanged
from domain.values import Requester, TicketState
from tests.unit.domain.support import at, given, move, open_cmd, when

ANN = ContactId(uuid.UUID(int=1))
BEA = ContactId(uuid.UUID(int=2))
ACME = OrganizationId(uuid.UUID(int=3))


def created(**kw: object) -> list[Event]:
    fields = ContactFields.model_validate({"email": "ann@acme.test", "name": "Ann", **kw})
    return decide_contact(CreateContact(contact_id=ANN, fields=fields, at=at()), None)


def then(history: list[Event], command: UpdateContact | MergeContact) -> list[Event]:
    return decide_contact(command, fold_contact(history))


def test_create_records_the_checked_fields() -> None:
    events = created(email=" ann@acme.test ", phone="  ", tags=("VIP", "vip"),
                     organization_id=ACME)
    assert events == [ContactCreated(contact_id=ANN, email="ann@acme.test", name="Ann",
                                     phone=None, organization_id=ACME, tags=("vip",), at=at())]


def test_create_refuses_a_malformed_email_and_a_second_create() -> None:
    with pytest.raises(ValidationFailed) as exc:
        created(email="not-an-address")
    assert exc.value.field == "email"
    with pytest.raises(AlreadyExists):
        decide_contact(CreateContact(contact_id=ANN, fields=ContactFields(email="a@b.test"),
                                     at=at()), fold_contact(created()))


def test_update_records_every_field_after_the_change() -> None:
    history = created(phone="+1 555")
    fields = ContactFields(email="ann@acme.test", name="Ann B", phone=None, tags=("x",))
    assert then(history, UpdateContact(fields=fields, at=at(1))) == [
        ContactUpdated(email="ann@acme.test", name="Ann B", phone=None, external_id=None,
                       organization_id=None, tags=("x",), at=at(1))]
    state = fold_contact(history + then(history, UpdateContact(fields=fields, at=at(1))))
    assert state is not None and state.version == 2 and state.phone is None


def test_an_update_to_the_same_fields_records_nothing() -> None:
    fields = ContactFields(email="ann@acme.test", name="Ann")
    assert then(created(), UpdateContact(fields=fields, at=at(1))) == []


def test_update_of_a_missing_contact_is_not_found() -> None:
    with pytest.raises(NotFound):
        decide_contact(UpdateContact(fields=ContactFields(email="a@b.test"), at=at()), None)


def test_merge_records_the_survivor_and_then_refuses_commands() -> None:
    history = created()
    events = then(history, MergeContact(into=BEA, at=at(1)))
    assert events == [ContactMerged(into=BEA, at=at(1))]
    merged = history + events
    state = fold_contact(merged)
    assert state is not None and state.merged_into == BEA
    with pytest.raises(ContactMergedAway) as exc:
        then(merged, UpdateContact(fields=ContactFields(email="a@b.test"), at=at(2)))
    assert exc.value.into == BEA


def test_a_contact_is_not_merged_into_itself() -> None:
    with pytest.raises(ValidationFailed):
        then(created(), MergeContact(into=ANN, at=at(1)))


def test_a_contact_stream_starts_with_its_creation() -> None:
    with pytest.raises(CorruptStream):
        fold_contact([ContactMerged(into=BEA, at=at())])


def test_the_email_domain_is_compared_in_lower_case() -> None:
    assert email_domain("Ann@ACME.Test") == "acme.test"


# --- a ticket between contacts ------------------------------------------------------------


def test_a_ticket_moves_to_another_contact_even_when_closed() -> None:
    history = given(open_cmd(), move(TicketState.SOLVED, at(1)), move(TicketState.CLOSED, at(2)))
    bea = Requester(email="bea@acme.test", name="Bea", contact_id=BEA)
    assert when(history, ChangeRequester(requester=bea, at=at(3))) == [
        RequesterChanged(requester=bea, at=at(3))]


def test_moving_a_ticket_to_its_own_requester_records_nothing() -> None:
    ann = Requester(email="ann@example.com", name="Ann", contact_id=ANN)
    history = given(open_cmd(requester=ann))
    assert when(history, ChangeRequester(requester=ann, at=at(1))) == []


def test_a_ticket_moves_to_a_contact_only() -> None:
    with pytest.raises(ValidationFailed):
        when(given(open_cmd()), ChangeRequester(requester=Requester(email="x@y.test"), at=at(1)))
