"""Errors the handlers raise for a rule that refuses a command.

Each carries a stable ``code`` and a human ``message``; the kind says what went
wrong in general terms, and the API maps kinds to statuses at its edge
(``NotAuthenticated`` 401, ``Forbidden`` 403, ``Missing`` 404, ``Conflict`` 409, ``Gone`` 410,
``VersionMismatch`` 412, ``TooLarge`` 413, ``Invalid`` 422, ``TooManyAttempts`` 429
with ``Retry-After``). Rules of the ticket aggregate raise
``domain.errors`` instead.
"""

from __future__ import annotations

from types import TracebackType
from typing import Any

from domain.errors import ValidationFailed


class HandlerError(Exception):
    """Base class of every error a handler raises for a refused command; ``headers``
    are the answer's own (a pause's ``Retry-After``)."""

    def __init__(self, code: str, message: str, **extra: Any) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.extra = extra
        self.headers: dict[str, str] = {}


class Missing(HandlerError):
    """The command addresses something the tenant does not have."""


class Forbidden(HandlerError):
    """The caller's role may not do this to this record (a shared macro is the admins'
    to change)."""


class Conflict(HandlerError):
    """The command contradicts what exists (a taken e-mail, say)."""


class NotAuthenticated(HandlerError):
    """The credentials presented prove nothing: one answer for every reason, so the
    answer never tells which part was wrong."""


class Gone(HandlerError):
    """The command spends something that was spent already or has expired."""


class VersionMismatch(HandlerError):
    """The caller asked for a version of a record that is not the current one."""

    def __init__(self, message: str, current_version: int) -> None:
        super().__init__("precondition_failed", message, current_version=current_version)
        self.current_version = current_version


def expect_version(kind: str, current: int, expected: int | None) -> None:
    """A change asked for at version ``expected`` (If-Match; None: any) of a ``kind``
    now at ``current``: VersionMismatch unless they agree."""
    if expected is not None and expected != current:
        raise VersionMismatch(f"the {kind} is at version {current}", current)


class TooLarge(HandlerError):
    """What was sent is over a limit on its size (a file over the tenant's limit)."""


class Invalid(HandlerError):
    """A value breaks a rule. ``field`` names the input field at fault, if one is."""

    def __init__(self, code: str, message: str, *, field: str | None = None,
                 reason: str | None = None, kind: str = "value_error", **extra: Any) -> None:
        super().__init__(code, message, **extra)
        self.field = field
        self.reason = reason or message
        self.kind = kind

    @classmethod
    def of(cls, code: str, exc: ValidationFailed, field: str | None = None) -> Invalid:
        """The 422 of a domain rule's refusal, naming ``field`` (default: the one the
        rule named) before its message."""
        field = field or exc.field
        return cls(code, f"{field}: {exc.message}" if field else exc.message, field=field,
                   reason=exc.message)


class TooManyAttempts(HandlerError):
    """Sign-ins for this account or from this address are paused; ``retry_after`` is in
    whole seconds."""

    def __init__(self, retry_after: int) -> None:
        super().__init__("too_many_sign_in_attempts",
                         "too many failed sign-ins for this account or from this address: "
                         f"try again in {retry_after} seconds")
        self.retry_after = retry_after
        self.headers = {"Retry-After": str(retry_after)}



class _Refusing:
    def __init__(self, code: str, field: str | None) -> None:
        self.code, self.field = code, field

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        if isinstance(exc, ValidationFailed):
            raise Invalid.of(self.code, exc, self.field) from exc


def refused_as(code: str, field: str | None = None) -> _Refusing:
    """A block in which a domain rule's refusal (``ValidationFailed``) is the handler's
    422 ``code`` (``Invalid.of``), naming ``field`` or the field the rule named."""
    return _Refusing(code, field)

__all__ = ["Conflict", "Forbidden", "Gone", "HandlerError", "Invalid", "Missing",
           "NotAuthenticated", "TooLarge", "TooManyAttempts", "VersionMismatch",
           "expect_version", "refused_as"]
