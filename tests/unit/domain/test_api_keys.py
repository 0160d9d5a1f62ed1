"""Given events, when a command, then events: the API key aggregate."""

from __future__ import annotations

import uuid

import pytest

from domain.api_key import (
    AgentLinkRefused,
    ApiKey,
    IssueApiKey,
    RevokeApiKey,
    ScopesRefused,
    decide_api_key,
    evolve_api_key,
    fold_api_key,
)
from domain.errors import AlreadyExists, CorruptStream, NotFound
from domain.events import ApiKeyIssued, ApiKeyRevoked, Event
from domain.ids import AgentId, ApiKeyId
from domain.values import Role
from tests.unit.domain.support import at

KEY = ApiKeyId(uuid.UUID("00000000-0000-4000-8000-0000000000c1"))
ANN = AgentId(uuid.UUID("00000000-0000-4000-8000-0000000000b1"))


def issue(role: Role = Role.ADMIN, agent_id: AgentId | None = None) -> IssueApiKey:
    return IssueApiKey(key_id=KEY, name="ops", role=role, prefix="hd_abcdefg",
                       agent_id=agent_id, at=at())


def when_key(history: list[Event], command: IssueApiKey | RevokeApiKey) -> list[Event]:
    return decide_api_key(command, fold_api_key(None, history))


def test_issuing_records_the_key_but_never_its_secret():
    then = when_key([], issue())
    assert then == [ApiKeyIssued(key_id=KEY, name="ops", role=Role.ADMIN, prefix="hd_abcdefg",
                                 at=at())]
    assert fold_api_key(None, then) == ApiKey(id=KEY, name="ops", role=Role.ADMIN,
                                              prefix="hd_abcdefg")


def test_a_key_is_issued_once():
    with pytest.raises(AlreadyExists):
        when_key(when_key([], issue()), issue())


def test_an_agent_key_belongs_to_an_agent():
    with pytest.raises(AgentLinkRefused) as info:
        when_key([], issue(Role.AGENT))
    assert (info.value.field, info.value.kind) == ("agent_id", "missing")
    assert when_key([], issue(Role.AGENT, ANN))[0].role is Role.AGENT
    assert when_key([], issue(Role.ADMIN, ANN))[0].role is Role.ADMIN


@pytest.mark.parametrize("role", [Role.INTAKE, Role.ANALYST, Role.AUDITOR])
def test_a_machine_key_never_acts_as_a_person(role):
    with pytest.raises(AgentLinkRefused) as info:
        when_key([], issue(role, ANN))
    assert info.value.field == "agent_id" and info.value.kind == "value_error"
    assert when_key([], issue(role))[0].role is role


def test_revoking_twice_keeps_the_first_revocation():
    history = when_key([], issue())
    revoked = when_key(history, RevokeApiKey(at=at(1)))
    assert revoked == [ApiKeyRevoked(key_id=KEY, at=at(1))]
    assert when_key(history + revoked, RevokeApiKey(at=at(2))) == []
    key = fold_api_key(None, history + revoked)
    assert key is not None and key.revoked_at == at(1)


def test_no_key_no_revocation():
    with pytest.raises(NotFound):
        when_key([], RevokeApiKey(at=at()))


def test_a_key_evolves_only_from_its_own_events():
    with pytest.raises(CorruptStream):
        evolve_api_key(None, ApiKeyRevoked(key_id=KEY, at=at()))
    key = fold_api_key(None, when_key([], issue()))
    other = ApiKeyId(uuid.UUID(int=7))
    with pytest.raises(CorruptStream):
        evolve_api_key(key, ApiKeyRevoked(key_id=other, at=at()))


def test_scopes_narrow_a_key_within_its_role_and_its_issuer():
    role = frozenset({"ticket:list", "ticket:read", "self:read"})
    scoped = issue(Role.AGENT, ANN).model_copy(update={
        "scopes": ("ticket:read", "self:read", "ticket:read"), "role_permissions": role,
        "issuer_permissions": role | {"api-key:write"}})
    then = when_key([], scoped)
    assert then[0].scopes == ("self:read", "ticket:read")  # sorted, once each
    assert fold_api_key(None, then).scopes == ("self:read", "ticket:read")
    # Beyond the role, beyond the issuer (an unscoped key holds all its role's), none.
    for update, excess in (({"scopes": ("ticket:read", "audit:verify")}, ["audit:verify"]),
                           ({"scopes": None, "issuer_permissions": {"ticket:read"}},
                            ["self:read", "ticket:list"]),
                           ({"scopes": ()}, [])):
        with pytest.raises(ScopesRefused) as info:
            when_key([], scoped.model_copy(update=update))
        assert (info.value.field, info.value.excess) == ("scopes", excess), update
