"""Text with placeholders, as rule notes and macros carry it.

A placeholder is ``{{name}}``: ``requester.name``, ``requester.email``, ``ticket.id``
(the ticket's reference), ``ticket.subject``, ``agent.name`` (who applies a macro;
a rule's notes have none) and ``fields.<key>`` (a ticket field's value). Anything
else between double braces is refused when the text is saved, so a template never
renders a placeholder it does not know.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from domain.errors import ValidationFailed
from domain.validation import BODY_MAX

PLACEHOLDERS = frozenset({"requester.name", "requester.email", "ticket.id", "ticket.subject",
                          "agent.name"})
_PLACEHOLDER = re.compile(r"\{\{\s*([^{}]*?)\s*\}\}")


def check_template(text: str, where: str) -> frozenset[str]:
    """Refuse an empty or too long text, or one with an unknown placeholder; returns
    the ticket field keys it names (``fields.<key>``), for the caller to check."""
    if not text.strip():
        raise ValidationFailed("the text must not be empty", field=where)
    if len(text) > BODY_MAX:
        raise ValidationFailed(f"the text is at most {BODY_MAX} characters", field=where)
    keys: set[str] = set()
    for name in _PLACEHOLDER.findall(text):
        if name.startswith("fields.") and len(name) > len("fields."):
            keys.add(name[len("fields."):])
        elif name not in PLACEHOLDERS:
            raise ValidationFailed(f"{{{{{name}}}}} is not a placeholder", field=where)
    return frozenset(keys)


def render(text: str, values: Mapping[str, str | None]) -> str:
    """``text`` with each placeholder replaced by its value (empty when it has none)."""
    return _PLACEHOLDER.sub(lambda m: values.get(m.group(1)) or "", text)


__all__ = ["PLACEHOLDERS", "check_template", "render"]
