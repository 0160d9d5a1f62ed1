"""The one configuration every value, command, state and event of the domain has.

A fact, a decision or a state is never edited in place (a change is a new value, so
a state a handler read cannot move under it), and a field nobody declared is refused
rather than dropped (a misspelt name in a command or a stored payload fails loudly).
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class Frozen(BaseModel):
    """Immutable and closed: the base of the domain's models."""

    model_config = ConfigDict(frozen=True, extra="forbid")


__all__ = ["Frozen"]
