"""The API key aggregate: a credential of the tenant with a role, issued once and
revoked at most once.

A key's events are on the tenant stream (``ApiKeyIssued``, ``ApiKeyRevoked``); its
state is its row, which the write side locks while it decides (docs/architecture.md).
The secret is minted by the caller before the decision (it is random, and only its
hash and ``prefix`` are kept); ``decide_api_key`` is pure and ``evolve_api_key`` only
applies facts. What the aggregate cannot see (that the agent a key acts as is an
active agent of the tenant) the caller checks against its rows.

The rules: an agent key belongs to an agent (its work is attributed to them); admin
keys may act as an agent or as themselves; machine roles never act as a person. A key
issued with ``scopes`` holds only those permissions: never one its role does not hold,
and never more than the credential issuing it holds (the caller says which those are:
the catalog is the API's, api/http/access.py).
"""

from __future__ import annotations

from domain.aggregate import BaseCommand, Identified
from domain.errors import AlreadyExists, CorruptStream, NotFound, ValidationFailed
from domain.events import ApiKeyIssued, ApiKeyRevoked, Event
from domain.evolution import fold_onto, stream_start
from domain.frozen import Frozen
from domain.ids import AgentId, ApiKeyId
from domain.values import Role, UtcDatetime

LINKABLE = frozenset({Role.ADMIN, Role.AGENT})
"""The roles of keys that may act as a person."""


class AgentLinkRefused(ValidationFailed):
    """A key's ``agent_id`` breaks the rules of its role: ``reason`` and ``kind`` say
    how, for the field's error."""

    def __init__(self, message: str, *, reason: str | None = None,
                 kind: str = "value_error") -> None:
        super().__init__(message, field="agent_id")
        self.reason = reason or message
        self.kind = kind


class ScopesRefused(ValidationFailed):
    """A key's ``scopes`` name permissions it may not be given (``excess``, sorted)."""

    def __init__(self, message: str, excess: list[str]) -> None:
        super().__init__(message, field="scopes")
        self.excess = excess


class KeyGrant(Frozen):
    """What a key is issued with, and holds as issued: its name, role, ``prefix`` (the
    first characters of its secret), the agent it acts as, and ``scopes`` (None: all
    its role's permissions)."""

    name: str
    role: Role
    prefix: str
    agent_id: AgentId | None = None
    scopes: tuple[str, ...] | None = None


class ApiKey(KeyGrant, Identified):
    """A key as issued; ``revoked_at`` None while it works."""

    id: ApiKeyId
    revoked_at: UtcDatetime | None = None


class IssueApiKey(KeyGrant, BaseCommand):
    """Issue a key whose secret the caller minted (``prefix``: its first characters).

    ``scopes`` (None: unscoped) must lie within ``role_permissions`` (what the key's role
    holds), and what the key will hold within ``issuer_permissions`` (what the credential
    issuing it holds); None for either skips that check (the operator's CLI, the demo)."""

    key_id: ApiKeyId
    role_permissions: frozenset[str] | None = None
    issuer_permissions: frozenset[str] | None = None


class RevokeApiKey(BaseCommand):
    """Revoke the key: it stops working, and its row keeps when (a second revocation
    changes nothing)."""


ApiKeyCommand = IssueApiKey | RevokeApiKey


def check_agent_link(role: Role, agent_id: AgentId | None) -> None:
    """An agent key names its agent; only admin and agent keys may name one."""
    if role is Role.AGENT and agent_id is None:
        raise AgentLinkRefused("an agent key must belong to an agent: give the agent_id of "
                               "an active agent", reason="required for an agent key",
                               kind="missing")
    if agent_id is not None and role not in LINKABLE:
        raise AgentLinkRefused(f"a {role.value} key cannot act as an agent; agent_id is for "
                               "admin and agent keys")


def check_scopes(command: IssueApiKey) -> None:
    """A key is given no permission its role lacks, and holds none its issuer lacks."""
    role_held = command.role_permissions
    scopes = None if command.scopes is None else frozenset(command.scopes)
    if scopes is not None and not scopes:
        raise ScopesRefused("scopes, when given, name at least one permission", [])
    if role_held is not None and scopes is not None and scopes - role_held:
        excess = sorted(scopes - role_held)
        raise ScopesRefused(f"a {command.role.value} key cannot hold "
                            + ", ".join(excess) + ": its role does not", excess)
    held = scopes if scopes is not None else role_held
    if command.issuer_permissions is not None and held is not None:
        excess = sorted(held - command.issuer_permissions)
        if excess:
            raise ScopesRefused("this credential cannot issue a key holding "
                                + ", ".join(excess) + ": it does not hold "
                                + ("it" if len(excess) == 1 else "them")
                                + " itself; give scopes within its own", excess)


def decide_api_key(command: ApiKeyCommand, state: ApiKey | None) -> list[Event]:
    """The events a command produces on a key (None: no such key). Revoking a revoked
    key returns ``[]``: the first revocation stands."""
    if isinstance(command, IssueApiKey):
        if state is not None:
            raise AlreadyExists("the API key already exists")
        check_agent_link(command.role, command.agent_id)
        check_scopes(command)
        scopes = None if command.scopes is None else tuple(sorted(set(command.scopes)))
        return [ApiKeyIssued(key_id=command.key_id, name=command.name, role=command.role,
                             prefix=command.prefix, scopes=scopes, at=command.at)]
    if state is None:
        raise NotFound("the API key does not exist")
    if state.revoked_at is not None:
        return []
    return [ApiKeyRevoked(key_id=state.id, at=command.at)]


def evolve_api_key(state: ApiKey | None, event: Event) -> ApiKey:
    """Apply one event to a key (None before it was issued). ``ApiKeyIssued`` does not
    carry the agent a key acts as: a key evolved from events alone has none."""
    if state is None:
        issued = stream_start(event, ApiKeyIssued, "an API key")
        return ApiKey(id=issued.key_id, name=issued.name, role=issued.role,
                      prefix=issued.prefix, scopes=issued.scopes)
    match event:
        case ApiKeyRevoked(key_id=key_id) if key_id == state.id:
            return state.model_copy(update={"revoked_at": event.at})
        case _:
            raise CorruptStream(f"{event.TYPE} does not apply to API key {state.id}")


fold_api_key = fold_onto(evolve_api_key)


__all__ = [
    "LINKABLE",
    "AgentLinkRefused",
    "ApiKey",
    "ApiKeyCommand",
    "IssueApiKey",
    "KeyGrant",
    "RevokeApiKey",
    "ScopesRefused",
    "check_agent_link",
    "check_scopes",
    "decide_api_key",
    "evolve_api_key",
    "fold_api_key",
]
