"""Input rules shared by commands: lengths, tag slugs, e-mail shape."""

from __future__ import annotations

import re
from collections.abc import Iterable

from domain.errors import ValidationFailed
from domain.values import Requester

SUBJECT_MAX = 200
BODY_MAX = 50_000
REASON_MAX = 500
NAME_MAX = 200
TAGS_MAX = 20
POSITION_MAX = 1_000_000
"""The highest position of a rule or an SLA policy in its tenant's order."""

TAG_PATTERN = r"^[a-z0-9][a-z0-9_-]{0,39}$"
TAG_INPUT_PATTERN = r"^\s*[A-Za-z0-9][A-Za-z0-9_-]{0,39}\s*$"
"""A tag as a request may give it: ``TAG_PATTERN`` once trimmed and lower-cased."""
NOT_BLANK = r"\S"
"""Text that is not empty or only white space (a search, not a whole match)."""
"""What a tag is once normalised: a lower-case slug of at most 40 characters."""
_TAG = re.compile(TAG_PATTERN)
# Deliberately loose: one @, no spaces, a dot in the domain. Deliverability is not
# something a regex can decide.
EMAIL_PATTERN = r"^[^@\s]+@[^@\s]+\.[^@\s]+$"
"""What an e-mail address looks like here: one @, no spaces, a dot in the domain."""
_EMAIL = re.compile(EMAIL_PATTERN)


SLUG_PATTERN = r"^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$"
"""A tenant's slug: lower-case letters, digits and inner hyphens, 1 to 63 characters
(the constraint of migration 0551)."""
_SLUG = re.compile(SLUG_PATTERN)


def check_slug(value: str) -> str:
    """A tenant slug as stored (lower-cased), or ``ValueError`` saying what one is."""
    slug = value.strip().lower()
    if not _SLUG.fullmatch(slug):
        raise ValueError("a slug has 1 to 63 lower-case letters, digits and hyphens, "
                         "and neither begins nor ends with a hyphen")
    if re.fullmatch(r"[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}", slug):
        raise ValueError("a slug cannot be a UUID: sign-in reads that as a tenant id")
    return slug


def slug_of(name: str) -> str:
    """The slug a name suggests (``Acme Support`` -> ``acme-support``)."""
    return re.sub(r"[^a-z0-9]+", "-", name.lower())[:40].strip("-") or "tenant"


def check_text(value: str, field: str, maximum: int) -> str:
    """Reject blank or over-long text; return it unchanged."""
    if not value.strip():
        raise ValidationFailed(f"{field} must not be empty", field=field)
    if len(value) > maximum:
        raise ValidationFailed(f"{field} must be at most {maximum} characters", field=field)
    return value


def check_name(name: str, maximum: int) -> str:
    """A configured thing's name (a macro's, a view's, a rule's, a policy's, a
    calendar's), trimmed: 1 to ``maximum`` characters."""
    name = name.strip()
    if not name or len(name) > maximum:
        raise ValidationFailed(f"name must be 1 to {maximum} characters", field="name")
    return name


def check_position(position: int) -> int:
    """A rule's or an SLA policy's place in its tenant's order: 0 to ``POSITION_MAX``."""
    if not 0 <= position <= POSITION_MAX:
        raise ValidationFailed(f"position must be 0 to {POSITION_MAX}", field="position")
    return position


def check_reason(value: str | None) -> str | None:
    """An optional state-change reason: None or 1..REASON_MAX characters."""
    return None if value is None else check_text(value, "reason", REASON_MAX)


def check_email(value: str, field: str) -> str:
    """Reject a malformed or over-long e-mail address; return it unchanged."""
    if len(value) > 254 or not _EMAIL.match(value):
        raise ValidationFailed(f"{field} is not an e-mail address", field=field)
    return value


def check_requester(requester: Requester) -> Requester:
    """Reject a malformed e-mail address or an over-long name."""
    check_email(requester.email, "requester.email")
    if requester.name is not None and len(requester.name) > NAME_MAX:
        raise ValidationFailed(
            f"requester.name must be at most {NAME_MAX} characters", field="requester.name"
        )
    return requester


def normalize_tags(tags: Iterable[str], field: str = "tags") -> tuple[str, ...]:
    """Lower-case, de-duplicate and sort tags, rejecting anything not a slug.

    Tags are lower-cased rather than rejected for case because clients type them by
    hand; anything else that is not ``[a-z0-9][a-z0-9_-]{0,39}`` is refused.
    """
    out: set[str] = set()
    for raw in tags:
        tag = raw.strip().lower()
        if not _TAG.match(tag):
            raise ValidationFailed(f"{raw!r} is not a valid tag", field=field)
        out.add(tag)
    return tuple(sorted(out))


def check_tag_count(tags: tuple[str, ...]) -> tuple[str, ...]:
    """A ticket holds at most ``TAGS_MAX`` tags."""
    if len(tags) > TAGS_MAX:
        raise ValidationFailed(f"a ticket has at most {TAGS_MAX} tags", field="tags")
    return tags


__all__ = [
    "BODY_MAX",
    "NAME_MAX",
    "SUBJECT_MAX",
    "TAGS_MAX",
    "check_email",
    "check_reason",
    "check_requester",
    "check_tag_count",
    "check_text",
    "normalize_tags",
]
