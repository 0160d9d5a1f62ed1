"""The templates of the desk's notification mail: their kinds, placeholders, defaults,
the check a tenant's own template passes when saved, and rendering.

A template is a subject and a plain-text body written in Jinja2, rendered in Jinja2's
sandbox (``jinja2.sandbox.SandboxedEnvironment``): a template reads the placeholders
of its kind and nothing else (no attribute of a Python object, no import, no file).
A tenant's template is checked when it is saved (``check_template``): one that does
not compile, or that names a placeholder its kind does not have, is refused there,
so rendering at send time meets only what was checked. Undefined names raise at
render time too (``StrictUndefined``).

Rendering takes time in proportion to the template, whatever it says: the
placeholders are short strings, so a mail needs no loops, and a template has none
(``{% for %}``, macros, ``call`` blocks, includes, imports and ``extends`` are
refused, and no global such as ``range`` or ``lipsum`` is defined); the sandbox is
told to refuse an operation whose operands could make a huge value (a number above
``MAX_NUMBER`` given to a filter or method, a string longer than ``MAX_OPERAND``
filtered or called on, ``*`` and ``**`` making more than ``MAX_OUTPUT``), and the
output is capped.

Subjects are one line: the rendered subject's line breaks and runs of blanks become
one space (a header cannot be split by a placeholder's value).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import jinja2
import jinja2.exceptions
import jinja2.meta
import jinja2.nodes
import jinja2.sandbox

KINDS = ("invitation", "portal_link", "acknowledgement", "assignment", "breach", "follow")
"""Every kind of notification mail a tenant has a template of, in the order the docs
list them."""
RULE_KIND = "rule"
"""The mail a rule's ``send_mail`` action sends: its template is the rule's own, so it
has placeholders (``PLACEHOLDERS``) but no default and no tenant template."""

MAX_SUBJECT = 300
MAX_BODY = 20_000
MAX_OUTPUT = 100_000
"""Characters a rendered body may have; a template that makes more is cut short."""
MAX_OPERAND = 4_000
"""The longest string a filter or a method is applied to (or given) in a template."""
MAX_NUMBER = 10_000
"""The largest number a filter or a method is given in a template (``center(10**9)``
would make a string of a gigabyte)."""
_REFUSED_NODES = (jinja2.nodes.For, jinja2.nodes.Macro, jinja2.nodes.CallBlock,
                  jinja2.nodes.Include, jinja2.nodes.Import, jinja2.nodes.FromImport,
                  jinja2.nodes.Extends)

PLACEHOLDERS: Mapping[str, Mapping[str, str]] = {
    "invitation": {
        "desk": "the desk's name (the sending mailbox's name, else its address)",
        "name": "the invitee's name",
        "email": "the invitee's e-mail",
        "role": "the role the invitation grants",
        "tenant": "the tenant's short name, to sign in with",
        "token": "the invitation token, spent once at POST /v1/auth/invitations/accept",
        "link": "where to set a password: PUBLIC_URL's console",
        "expires_at": "when the invitation expires (UTC, ISO 8601)",
    },
    "portal_link": {
        "desk": "the desk's name",
        "name": "the contact's name (their e-mail when they have none)",
        "email": "the contact's e-mail",
        "tenant": "the tenant's short name",
        "token": "the password link's token",
        "link": "the portal page that sets the password with the token",
        "expires_at": "when the link expires (UTC, ISO 8601)",
    },
    "acknowledgement": {
        "desk": "the desk's name",
        "name": "the requester's name (their e-mail when they have none)",
        "email": "the requester's e-mail",
        "subject": "the ticket's subject",
        "ticket_id": "the ticket's id",
        "reference": "the ticket's mail reference (#token) on a mail ticket, else empty",
    },
    "assignment": {
        "desk": "the desk's name",
        "agent_name": "the assignee's name",
        "subject": "the ticket's subject",
        "ticket_id": "the ticket's id",
        "priority": "the ticket's priority",
        "requester": "the requester's e-mail",
    },
    "breach": {
        "desk": "the desk's name",
        "agent_name": "the name of the agent told (the assignee, else each active admin)",
        "subject": "the ticket's subject",
        "ticket_id": "the ticket's id",
        "priority": "the ticket's priority",
        "metric": "the SLA metric breached (first_response, next_reply, resolution)",
        "due_at": "when it was due (UTC, ISO 8601)",
    },
    "follow": {
        "desk": "the desk's name",
        "agent_name": "the name of the follower told",
        "subject": "the ticket's subject",
        "ticket_id": "the ticket's id",
        "priority": "the ticket's priority",
        "change": "what happened (a new reply or note, its new state, its new assignee)",
    },
    RULE_KIND: {
        "desk": "the desk's name",
        "name": "the recipient's name (their e-mail when they have none)",
        "email": "the recipient's e-mail",
        "requester_name": "the requester's name (their e-mail when they have none)",
        "requester_email": "the requester's e-mail",
        "subject": "the ticket's subject",
        "ticket_id": "the ticket's id",
        "priority": "the ticket's priority",
        "state": "the ticket's state",
        "reference": "the ticket's mail reference (#token) on a mail ticket, else empty",
    },
}

SAMPLES: Mapping[str, Mapping[str, str]] = {
    "invitation": {"desk": "Acme support", "name": "Sam Agent", "email": "sam@example.com",
                   "role": "agent", "tenant": "acme", "token": "hdi_sample-token",
                   "link": "https://desk.example.com/console/",
                   "expires_at": "2026-01-08T09:00:00+00:00"},
    "portal_link": {"desk": "Acme support", "name": "Ann Customer", "email": "ann@example.com",
                    "tenant": "acme", "token": "hdp_sample-token",
                    "link": "https://desk.example.com/portal/acme/#/password/hdp_sample-token",
                    "expires_at": "2026-01-08T09:00:00+00:00"},
    "acknowledgement": {"desk": "Acme support", "name": "Ann Customer",
                        "email": "ann@example.com", "subject": "Printer on fire",
                        "ticket_id": "00000000-0000-4000-8000-000000000001",
                        "reference": "#a1b2c3d4e5f6g"},
    "assignment": {"desk": "Acme support", "agent_name": "Sam Agent",
                   "subject": "Printer on fire",
                   "ticket_id": "00000000-0000-4000-8000-000000000001",
                   "priority": "high", "requester": "ann@example.com"},
    "breach": {"desk": "Acme support", "agent_name": "Sam Agent", "subject": "Printer on fire",
               "ticket_id": "00000000-0000-4000-8000-000000000001", "priority": "high",
               "metric": "first_response", "due_at": "2026-01-01T10:00:00+00:00"},
    "follow": {"desk": "Acme support", "agent_name": "Sam Agent", "subject": "Printer on fire",
               "ticket_id": "00000000-0000-4000-8000-000000000001", "priority": "high",
               "change": "a new public reply"},
    RULE_KIND: {"desk": "Acme support", "name": "Ann Customer", "email": "ann@example.com",
                "requester_name": "Ann Customer", "requester_email": "ann@example.com",
                "subject": "Printer on fire",
                "ticket_id": "00000000-0000-4000-8000-000000000001", "priority": "high",
                "state": "open", "reference": "#a1b2c3d4e5f6g"},
}
"""What a preview renders with when it is given no data."""


@dataclass(frozen=True, slots=True)
class MailTemplate:
    """A subject and a plain-text body, both Jinja2 source."""

    subject: str
    body: str

    def document(self) -> dict[str, str]:
        return {"subject": self.subject, "body": self.body}


DEFAULTS: Mapping[str, MailTemplate] = {
    "invitation": MailTemplate(
        "You are invited to {{ desk }}",
        "Hello {{ name }},\n\nyou are invited to {{ desk }} as {{ role }}.\n\n"
        "Set your password at {{ link }} with this invitation token (tenant "
        "{{ tenant }}):\n\n{{ token }}\n\nIt can be used once, until {{ expires_at }}.\n"),
    "portal_link": MailTemplate(
        "Set your password for {{ desk }}",
        "Hello {{ name }},\n\nset a password for {{ desk }}'s help portal here:\n\n"
        "{{ link }}\n\nThe link works once, until {{ expires_at }}.\n"),
    "acknowledgement": MailTemplate(
        "We received your request: {{ subject }}{% if reference %} [{{ reference }}]"
        "{% endif %}",
        "Hello {{ name }},\n\nthank you for writing to {{ desk }}. We have received your "
        "request \"{{ subject }}\" and will answer as soon as we can.\n\n"
        "Reply to this mail to add to it.\n"),
    "assignment": MailTemplate(
        "Assigned to you: {{ subject }}",
        "Hello {{ agent_name }},\n\nthe ticket \"{{ subject }}\" ({{ priority }}, from "
        "{{ requester }}) is assigned to you.\n\nTicket {{ ticket_id }}\n"),
    "breach": MailTemplate(
        "SLA breached ({{ metric }}): {{ subject }}",
        "Hello {{ agent_name }},\n\nthe {{ metric }} target of the ticket \"{{ subject }}\" "
        "({{ priority }}) was due at {{ due_at }} and has passed.\n\n"
        "Ticket {{ ticket_id }}\n"),
    "follow": MailTemplate(
        "Update on a ticket you follow: {{ subject }}",
        "Hello {{ agent_name }},\n\nthe ticket \"{{ subject }}\" ({{ priority }}) that you "
        "follow has {{ change }}.\n\nTicket {{ ticket_id }}\n"),
}


class TemplateInvalid(ValueError):
    """A template that does not compile or names an unknown placeholder; ``field`` is
    ``subject`` or ``body``."""

    def __init__(self, message: str, field: str) -> None:
        super().__init__(message)
        self.message = message
        self.field = field


class RenderFailed(Exception):
    """A checked template that still failed to render (the sandbox refused an
    operation, a value it needs was missing)."""


def _check_operands(values: tuple[Any, ...]) -> None:
    for value in values:
        if isinstance(value, str) and len(value) > MAX_OPERAND:
            raise jinja2.exceptions.SecurityError(
                f"a string of more than {MAX_OPERAND} characters cannot be filtered or "
                "called on in a mail template")
        if (isinstance(value, int | float) and not isinstance(value, bool)
                and abs(value) > MAX_NUMBER):
            raise jinja2.exceptions.SecurityError(
                f"a number above {MAX_NUMBER} cannot be given to a filter or a method in a "
                "mail template")


def _guarded(f: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(f)  # keeps pass_context and its kind, which Jinja reads
    def call(*args: Any, **kwargs: Any) -> Any:
        _check_operands((*args, *kwargs.values()))
        return f(*args, **kwargs)
    return call


class _Sandbox(jinja2.sandbox.SandboxedEnvironment):
    """Jinja2's sandbox, refusing what could make a huge value (module docstring)."""

    intercepted_binops = frozenset({"*", "**"})

    def call_binop(self, context: Any, operator: str, left: Any, right: Any) -> Any:
        numbers = all(isinstance(v, int | float) and not isinstance(v, bool)
                      for v in (left, right))
        if operator == "**" and (not numbers or abs(right) > 64 or abs(left) > MAX_NUMBER):
            raise jinja2.exceptions.SecurityError("** is for small numbers in a mail template")
        if operator == "*" and not numbers:
            sized = [v for v in (left, right) if isinstance(v, str | list | tuple)]
            times = [v for v in (left, right) if isinstance(v, int)]
            if sized and times and len(sized[0]) * max(times[0], 0) > MAX_OUTPUT:
                raise jinja2.exceptions.SecurityError(
                    f"* would make more than {MAX_OUTPUT} characters")
        return super().call_binop(context, operator, left, right)

    def call(__self, __context: Any, __obj: Any, *args: Any, **kwargs: Any) -> Any:
        _check_operands((getattr(__obj, "__self__", None), *args, *kwargs.values()))
        return super().call(__context, __obj, *args, **kwargs)


def _environment() -> _Sandbox:
    # Made per use: the environment caches compiled templates, which is state no
    # module should hold. Compiling a notification's two strings costs well under a
    # millisecond next to an SMTP round trip.
    env = _Sandbox(undefined=jinja2.StrictUndefined, autoescape=False,
                   keep_trailing_newline=True)
    env.globals.clear()
    env.filters = {name: _guarded(f) for name, f in env.filters.items()}
    return env


def check_template(kind: str, template: MailTemplate) -> None:
    """``TemplateInvalid`` unless both parts compile, name only ``kind``'s placeholders
    and render with its sample values (what the sandbox refuses, such as an object's
    private attributes, is found here rather than when a mail is sent)."""
    if kind not in PLACEHOLDERS:
        raise TemplateInvalid(f"no mail template kind {kind!r}; the kinds are "
                              + ", ".join(KINDS), field="kind")
    env = _environment()
    for field, source, limit in (("subject", template.subject, MAX_SUBJECT),
                                 ("body", template.body, MAX_BODY)):
        if not isinstance(source, str) or not source.strip():
            raise TemplateInvalid(f"the {field} is a template, not empty", field=field)
        if len(source) > limit:
            raise TemplateInvalid(f"the {field} is at most {limit} characters", field=field)
        try:
            parsed = env.parse(source)
        except jinja2.TemplateSyntaxError as exc:
            raise TemplateInvalid(f"the {field} does not compile: {exc.message} "
                                  f"(line {exc.lineno})", field=field) from exc
        except RecursionError as exc:
            raise TemplateInvalid(f"the {field} nests too deep to compile",
                                  field=field) from exc
        except Exception as exc:  # whatever else the parser raises: still the author's
            raise TemplateInvalid(f"the {field} does not compile: {type(exc).__name__}",
                                  field=field) from exc
        refused = next(iter(parsed.find_all(_REFUSED_NODES)), None)
        if refused is not None:
            raise TemplateInvalid(
                f"the {field} uses {type(refused).__name__.lower()} (line {refused.lineno}), "
                "which mail templates do not have: no loops, macros, call blocks, "
                "includes, imports or extends", field=field)
        unknown = sorted(jinja2.meta.find_undeclared_variables(parsed)
                         - set(PLACEHOLDERS[kind]))
        if unknown:
            raise TemplateInvalid(
                f"the {field} names {', '.join(unknown)}, which {kind} mail does not have; "
                f"its placeholders are {', '.join(PLACEHOLDERS[kind])}", field=field)
        try:
            _render_one(env, source, SAMPLES[kind])
        except Exception as exc:  # the sandbox's refusal, a division by zero, ...
            raise TemplateInvalid(f"the {field} does not render: {type(exc).__name__}: "
                                  f"{exc}"[:300], field=field) from exc


def _render_one(env: _Sandbox, source: str, data: Mapping[str, Any]) -> str:
    out: list[str] = []
    size = 0
    for piece in env.from_string(source).generate(**data):
        out.append(piece)
        size += len(piece)
        if size > MAX_OUTPUT:
            break
    return "".join(out)[:MAX_OUTPUT]


_BLANKS = re.compile(r"\s+")
_CONTROLS = re.compile(r"[\x00-\x1f\x7f]")


def render(template: MailTemplate, data: Mapping[str, Any]) -> tuple[str, str]:
    """(subject, body) of ``template`` with ``data``; ``RenderFailed`` with the reason."""
    env = _environment()
    try:
        subject = _render_one(env, template.subject, data)
        body = _render_one(env, template.body, data)
    except Exception as exc:  # SecurityError and UndefinedError among them
        raise RenderFailed(f"{type(exc).__name__}: {exc}"[:300]) from exc
    # No control character survives in the subject, nor NUL in the body (a string
    # literal's escape can make one; no mail, and no Postgres text, may hold it).
    subject = _CONTROLS.sub("", _BLANKS.sub(" ", subject))
    return subject.strip()[:MAX_SUBJECT], body.replace("\x00", "")


def template_of(kind: str, overrides: Mapping[str, MailTemplate]) -> MailTemplate:
    """The tenant's template of ``kind``: its own, else the default."""
    return overrides.get(kind) or DEFAULTS[kind]


__all__ = ["DEFAULTS", "KINDS", "MAX_BODY", "MAX_NUMBER", "MAX_OPERAND", "MAX_SUBJECT",
           "PLACEHOLDERS", "RULE_KIND", "SAMPLES", "MailTemplate", "RenderFailed",
           "TemplateInvalid", "check_template", "render", "template_of"]
