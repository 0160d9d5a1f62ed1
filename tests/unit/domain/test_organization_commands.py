"""Given events, when a command, then events: the organization aggregate."""

from __future__ import annotations

import uuid

import pytest

from domain.errors import AlreadyExists, CorruptStream, NotFound, ValidationFailed
from domain.events import ContactMerged, Event, OrganizationCreated, OrganizationUpdated
from domain.ids import ContactId, OrganizationId
from domain.organization import (
    CreateOrganization,
    UpdateOrganization,
    decide_organization,
    fold_organization,
)
from tests.unit.domain.support import at

ACME = OrganizationId(uuid.UUID(int=3))


def created(**kw: object) -> list[Event]:
    command = CreateOrganization.model_validate(
        {"organization_id": ACME, "name": "Acme", "domains": (), "at": at(), **kw})
    return decide_organization(command, None)


def test_create_records_name_and_normalised_domains() -> None:
    assert created(name=" Acme ", domains=("ACME.test", "@acme.example", "acme.test")) == [
        OrganizationCreated(organization_id=ACME, name="Acme",
                            domains=("acme.example", "acme.test"), at=at())]


@pytest.mark.parametrize("domain", ["localhost", "a b.test", "-x.test", ""])
def test_create_refuses_what_is_not_a_domain(domain: str) -> None:
    with pytest.raises(ValidationFailed) as exc:
        created(domains=(domain,))
    assert exc.value.field == "domains"


def test_create_refuses_a_blank_name_and_a_second_create() -> None:
    with pytest.raises(ValidationFailed):
        created(name="  ")
    with pytest.raises(AlreadyExists):
        decide_organization(CreateOrganization(organization_id=ACME, name="B", at=at()),
                            fold_organization(created()))


def test_update_records_name_and_domains_after_the_change() -> None:
    history = created(domains=("acme.test",))
    events = decide_organization(UpdateOrganization(name="Acme Ltd",
                                                    domains=("acme.test", "acme.example"),
                                                    at=at(1)), fold_organization(history))
    assert events == [OrganizationUpdated(name="Acme Ltd", domains=("acme.example", "acme.test"),
                                          at=at(1))]
    state = fold_organization(history + events)
    assert state is not None and state.version == 2 and state.name == "Acme Ltd"


def test_an_update_to_the_same_values_records_nothing() -> None:
    history = created(domains=("acme.test",))
    assert decide_organization(UpdateOrganization(name="Acme", domains=("ACME.test",), at=at(1)),
                               fold_organization(history)) == []


def test_update_of_a_missing_organization_is_not_found() -> None:
    with pytest.raises(NotFound):
        decide_organization(UpdateOrganization(name="A", domains=(), at=at()), None)


def test_an_organization_stream_holds_organization_events_only() -> None:
    with pytest.raises(CorruptStream):
        fold_organization([*created(), ContactMerged(into=ContactId(uuid.UUID(int=1)), at=at())])
