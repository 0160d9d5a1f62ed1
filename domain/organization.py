"""The organization aggregate: a company the tenant's contacts belong to.

An organization has a name and e-mail ``domains``; a new contact whose e-mail domain
is one of them joins it. Which organization holds a domain, and whether a name is
taken, are the handler's questions (they need every organization of the tenant).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from domain.aggregate import BaseCommand, NamedState
from domain.errors import AlreadyExists, NotFound, ValidationFailed
from domain.events import (
    Event,
    NewOrganization,
    OrganizationCreated,
    OrganizationParts,
    OrganizationUpdated,
)
from domain.evolution import StreamSteps
from domain.ids import OrganizationId
from domain.validation import NAME_MAX, check_text
from domain.values import UtcDatetime

DOMAINS_MAX = 50
DOMAIN_PATTERN = r"^(?=.{3,253}$)([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z]{2,63}$"
DOMAIN_INPUT_PATTERN = (r"^\s*@?(?=\S{3,253}\s*$)([A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?\.)+"
                        r"[A-Za-z]{2,63}\s*$")
"""A domain as a request may give it: ``DOMAIN_PATTERN`` once trimmed, lower-cased and
without a leading ``@``."""
"""An e-mail domain as organizations hold it: lower case, at least one dot."""
_DOMAIN = re.compile(DOMAIN_PATTERN)


class Organization(NamedState):
    """An organization as of ``version`` events."""

    id: OrganizationId
    domains: tuple[str, ...] = ()
    created_at: UtcDatetime
    updated_at: UtcDatetime


class CreateOrganization(NewOrganization, BaseCommand):
    """Create an organization with its name and e-mail domains."""


class UpdateOrganization(OrganizationParts, BaseCommand):
    """Set the name and domains (the handler fills in what a patch leaves out)."""


OrganizationCommand = CreateOrganization | UpdateOrganization


def normalize_domains(domains: Iterable[str]) -> tuple[str, ...]:
    """Lower-case, de-duplicate and sort domains, refusing anything not a domain."""
    out: set[str] = set()
    for raw in domains:
        domain = raw.strip().lower().removeprefix("@")
        if not _DOMAIN.match(domain):
            raise ValidationFailed(f"{raw!r} is not an e-mail domain", field="domains")
        out.add(domain)
    if len(out) > DOMAINS_MAX:
        raise ValidationFailed(f"an organization has at most {DOMAINS_MAX} domains",
                               field="domains")
    return tuple(sorted(out))


def decide_organization(command: OrganizationCommand, state: Organization | None
                        ) -> list[Event]:
    """The events a command produces on an organization (None: the stream is empty)."""
    if isinstance(command, CreateOrganization):
        if state is not None:
            raise AlreadyExists("the organization already exists")
        return [OrganizationCreated(organization_id=command.organization_id,
                                    name=check_text(command.name.strip(), "name", NAME_MAX),
                                    domains=normalize_domains(command.domains),
                                    at=command.at)]
    if state is None:
        raise NotFound("the organization does not exist")
    name = check_text(command.name.strip(), "name", NAME_MAX)
    domains = normalize_domains(command.domains)
    if (name, domains) == (state.name, state.domains):
        return []
    return [OrganizationUpdated(name=name, domains=domains, at=command.at)]


_STEPS = StreamSteps("an organization stream", Organization, OrganizationCreated, "organization_id",
                     (OrganizationUpdated,))
evolve_organization = _STEPS.evolve
fold_organization = _STEPS.fold


__all__ = [
    "DOMAIN_INPUT_PATTERN",
    "DOMAIN_PATTERN",
    "CreateOrganization",
    "Organization",
    "OrganizationCommand",
    "UpdateOrganization",
    "decide_organization",
    "evolve_organization",
    "fold_organization",
    "normalize_domains",
]
