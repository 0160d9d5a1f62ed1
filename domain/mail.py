"""Mail as the desk reads it: a raw RFC 5322 message parsed into what a ticket needs.

Parsing is the standard library's ``email`` with the modern policy (charsets, encoded
words, MIME structure) and ``nh3`` (Ammonia) for HTML; nothing here is a hand-written
MIME parser. This module does no I/O: ``parse`` takes bytes and gives a ``ParsedMail``
or raises ``Unparseable`` with the reason, and the rules that decide what a mail is
(automatic, a bounce, which thread it names) are pure functions over it.

What is kept of a mail:

- the body: the text part of a multipart/alternative (the HTML part, sanitized and
  turned to text, when there is none), with quoted history and the signature cut off;
- every attachment and inline image, a TNEF ``winmail.dat`` and a calendar invite
  (``text/calendar``) included, as files;
- the whole original message, as a file ``original.eml``: what the cut removed is
  still there.
"""

from __future__ import annotations

import email
import email.parser
import email.policy
import html
import re
from collections.abc import Collection, Iterable
from dataclasses import dataclass, field
from email.headerregistry import Address
from email.message import EmailMessage, Message
from email.utils import getaddresses, parseaddr

import nh3

from domain.validation import BODY_MAX, NAME_MAX, SUBJECT_MAX

MAX_BODY_CHARS = BODY_MAX
"""A stored body is cut at this many characters (the original stays attached), as a
subject and a sender's name are at what a ticket takes."""

ORIGINAL_NAME = "original.eml"


class Unparseable(Exception):
    """A mail the desk cannot take in; ``reason`` says why (kept in the quarantine)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass(frozen=True, slots=True)
class MailFile:
    """One file a mail carries."""

    name: str
    content_type: str
    data: bytes
    inline: bool = False


@dataclass(frozen=True, slots=True)
class Bounce:
    """What a delivery status notification says of one recipient."""

    recipient: str
    action: str
    status: str
    diagnostic: str | None

    @property
    def hard(self) -> bool:
        """A permanent failure (status 5.x.x, action failed)."""
        return self.action == "failed" and self.status.startswith("5")


@dataclass(frozen=True, slots=True)
class ParsedMail:
    message_id: str
    sender: str
    sender_name: str | None
    subject: str
    body: str
    to: tuple[str, ...] = ()
    cc: tuple[str, ...] = ()
    in_reply_to: tuple[str, ...] = ()
    references: tuple[str, ...] = ()
    files: tuple[MailFile, ...] = ()
    automatic: str | None = None
    """Why this mail was sent by a machine (RFC 3834), None for a person's."""
    bounces: tuple[Bounce, ...] = ()
    headers: dict[str, str] = field(default_factory=dict)

    def thread_ids(self) -> tuple[str, ...]:
        """The Message-IDs this mail answers, nearest first."""
        return tuple(dict.fromkeys((*self.in_reply_to, *reversed(self.references))))


_MSGID = re.compile(r"<([^<>\s]+)>")


def message_ids(value: str | None) -> tuple[str, ...]:
    """The ``<id>`` values of an In-Reply-To or References header, without brackets."""
    return tuple(_MSGID.findall(value or ""))


def _header(msg: Message, name: str) -> str | None:
    try:
        value = msg.get(name)
    except (ValueError, IndexError, TypeError):  # a header the policy cannot read
        return None
    return None if value is None else str(value)


def _addresses(msg: Message, name: str) -> tuple[str, ...]:
    values = [v for v in (_header(msg, n) for n in [name]) if v]
    out = []
    for _display, addr in getaddresses(values):
        if "@" in addr:
            out.append(addr.strip().lower())
    return tuple(dict.fromkeys(out))


def automatic_reason(msg: Message) -> str | None:
    """Why a mail is automatic (RFC 3834 and the headers autoresponders send), or None."""
    auto = (_header(msg, "Auto-Submitted") or "").strip().lower()
    if auto and auto != "no":
        return f"Auto-Submitted: {auto}"
    precedence = (_header(msg, "Precedence") or "").strip().lower()
    if precedence in ("bulk", "auto_reply", "list", "junk"):
        return f"Precedence: {precedence}"
    for name in ("X-Autoreply", "X-Autorespond"):
        value = _header(msg, name)
        if value is not None:
            return f"{name}: {value.strip()}"
    if _header(msg, "List-Id") or _header(msg, "List-Unsubscribe"):
        return "a mailing list's mail (List-Id)"
    if msg.get_content_type() == "multipart/report":
        return "a delivery report"
    return None


def _bounces(msg: Message) -> tuple[Bounce, ...]:
    """The per-recipient fields of a ``multipart/report; report-type=delivery-status``."""
    if msg.get_content_type() != "multipart/report":
        return ()
    found = []
    for part in msg.walk():
        if part.get_content_type() not in ("message/delivery-status",
                                           "message/global-delivery-status"):
            continue
        # Each group of fields is a Message of its own in the payload (RFC 3464).
        payload = part.get_payload()
        groups = payload if isinstance(payload, list) else []
        for group in groups:
            if not isinstance(group, Message):
                continue
            recipient = _header(group, "Final-Recipient") or _header(group, "Original-Recipient")
            if not recipient:
                continue
            address = recipient.split(";", 1)[-1].strip().lower()
            found.append(Bounce(
                recipient=address,
                action=(_header(group, "Action") or "").strip().lower(),
                status=(_header(group, "Status") or "").strip(),
                diagnostic=(_header(group, "Diagnostic-Code") or None)))
    return tuple(found)


# --- bodies --------------------------------------------------------------------------

_BLOCK_END = re.compile(r"(?i)<\s*(br\s*/?|/p|/div|/li|/tr|/h[1-6]|/blockquote)\s*>")
_QUOTE_BLOCK = re.compile(r"(?is)<blockquote[^>]*>.*?</blockquote>")
_GMAIL_QUOTE = re.compile(r'(?is)<div[^>]*class="?gmail_quote[^>]*>.*')
_SPACES = re.compile(r"[ \t]+")
_BLANKS = re.compile(r"\n{3,}")


def sanitize_html(value: str) -> str:
    """HTML safe to show: Ammonia's default allow-list (no script, no event handlers,
    no javascript: URLs)."""
    return nh3.clean(value)


def html_to_text(value: str) -> str:
    """The text of an HTML body: quoted blocks dropped, tags removed by the sanitizer
    (which also drops script and style content), entities decoded."""
    value = _GMAIL_QUOTE.sub("", _QUOTE_BLOCK.sub("", value))
    value = _BLOCK_END.sub("\n", value)
    text = html.unescape(nh3.clean(value, tags=set()))
    lines = [_SPACES.sub(" ", line).strip() for line in text.splitlines()]
    return _BLANKS.sub("\n\n", "\n".join(lines)).strip()


_ATTRIBUTION = re.compile(
    r"^(On .{4,300}wrote:|Le .{4,300}a écrit ?:|Am .{4,300}schrieb .{1,200}:"
    r"|-{2,} ?Original Message ?-{2,}|-{2,} ?Forwarded message ?-{2,}"
    r"|_{20,}|Begin forwarded message:)\s*$", re.IGNORECASE)
_OUTLOOK_HEADER = re.compile(r"^(From|De|Von): .+$")
_SENT_HEADER = re.compile(r"^(Sent|Date|Envoyé|Gesendet): .+$")


def strip_quoted(text: str, *, forwarded: bool = False) -> str:
    """``text`` without the quoted history and the signature.

    Cut at the first attribution line ("On ... wrote:"), an Outlook header block
    ("From: ...", then "Sent: ..."), or a run of ``>`` lines at the end, and drop a
    signature after the ``-- `` separator (RFC 3676). A forwarded mail keeps the
    forwarded text: what was forwarded is the message."""
    lines = text.replace("\r\n", "\n").split("\n")
    # Joined first: Gmail wraps a long attribution over two lines.
    cut = len(lines)
    for i, line in enumerate(lines):
        stripped = line.strip()
        joined = stripped + " " + (lines[i + 1].strip() if i + 1 < len(lines) else "")
        if not forwarded and (_ATTRIBUTION.match(stripped) or (
                stripped.startswith("On ") and _ATTRIBUTION.match(joined))):
            if "forward" in stripped.lower() or stripped.lower().startswith("begin forwarded"):
                continue
            cut = i
            break
        if not forwarded and _OUTLOOK_HEADER.match(stripped) and any(
                _SENT_HEADER.match(n.strip()) for n in lines[i + 1:i + 3]):
            cut = i
            break
        if line.rstrip("\r") == "-- ":
            cut = i
            break
    kept = lines[:cut]
    if not forwarded:
        while kept and (kept[-1].startswith(">") or not kept[-1].strip()):
            kept.pop()
        kept = [line for line in kept if not line.startswith(">")]
    return "\n".join(kept).strip()


_WINDOWS_1252_ALIASES = frozenset({"iso-8859-1", "latin1", "latin-1", "l1", "us-ascii",
                                   "ascii", "iso8859-1"})
"""Charsets that mail labels windows-1252 text with (its euro sign and quotes in
0x80-0x9f): decoded as windows-1252, as browsers (WHATWG) do."""


def _text_of(part: Message) -> str:
    assert isinstance(part, EmailMessage)
    if (part.get_content_charset() or "") in _WINDOWS_1252_ALIASES:
        raw = part.get_payload(decode=True)
        if isinstance(raw, bytes):
            return raw.decode("cp1252", "replace")
    try:
        content = part.get_content()
    except (LookupError, UnicodeError, ValueError, AssertionError):
        raw = part.get_payload(decode=True)
        content = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else ""
    return content if isinstance(content, str) else ""


def _body_parts(msg: EmailMessage) -> tuple[str | None, str | None]:
    """The text and HTML bodies (either may be None)."""
    text_part = msg.get_body(preferencelist=("plain",))
    html_part = msg.get_body(preferencelist=("html",))
    return (None if text_part is None else _text_of(text_part),
            None if html_part is None else _text_of(html_part))


def _file_name(part: Message, n: int) -> str:
    name = part.get_filename()
    if name:
        name = re.sub(r"[\\/\x00-\x1f\u202a-\u202e\u2066-\u2069]", "_", name).strip(". ")
    if not name:
        subtype = part.get_content_subtype()
        ext = {"calendar": "ics", "rfc822": "eml", "ms-tnef": "dat", "html": "html"}.get(
            subtype, "txt" if part.get_content_maintype() == "text" else "bin")
        name = f"part-{n}.{ext}"
    return name[:255]


def _files(msg: EmailMessage, bodies: set[int]) -> list[MailFile]:
    out: list[MailFile] = []
    for n, part in enumerate(msg.walk()):
        if part.is_multipart() or id(part) in bodies:
            continue
        ctype = part.get_content_type()
        if ctype == "message/rfc822":
            payload = part.get_payload()
            inner = payload[0] if isinstance(payload, list) and payload else None
            data = (inner.as_bytes(policy=email.policy.SMTP) if isinstance(inner, Message)
                    else b"")
        else:
            decoded = part.get_payload(decode=True)
            data = decoded if isinstance(decoded, bytes) else b""
        if not data:
            continue
        disposition = (part.get_content_disposition() or "").lower()
        out.append(MailFile(name=_file_name(part, n), content_type=ctype, data=data,
                            inline=disposition == "inline" or bool(part.get("Content-ID"))))
    return out


def parse(raw: bytes) -> ParsedMail:
    """``raw`` as the desk keeps it; ``Unparseable`` when it has no sender or no
    Message-ID to deduplicate it by, or when its MIME cannot be read."""
    if not raw.strip():
        raise Unparseable("the message is empty")
    try:
        msg = email.message_from_bytes(raw, policy=email.policy.default)
    except Exception as exc:  # the parser is lenient; anything it raises is malformed
        raise Unparseable(f"cannot parse the message: {exc}") from exc
    assert isinstance(msg, EmailMessage)
    if not len(msg):
        raise Unparseable("the message has no headers")
    sender_header = _header(msg, "From")
    if not sender_header:
        raise Unparseable("the message has no From header")
    name, sender = parseaddr(sender_header)
    if "@" not in sender:
        raise Unparseable(f"the From header names no address: {sender_header[:200]!r}")
    ids = message_ids(_header(msg, "Message-ID"))
    if not ids:
        raise Unparseable("the message has no Message-ID")
    text, html_body = _body_parts(msg)
    subject = (_header(msg, "Subject") or "").strip()
    forwarded = bool(re.match(r"(?i)^(fwd?|tr|wg):", subject))
    if text is not None and text.strip():
        body = strip_quoted(text, forwarded=forwarded)
    elif html_body is not None:
        body = strip_quoted(html_to_text(html_body), forwarded=forwarded)
    else:
        body = ""
    body_ids = {id(p) for p in (msg.get_body(preferencelist=("plain",)),
                                msg.get_body(preferencelist=("html",))) if p is not None}
    files = _files(msg, body_ids)
    if not body.strip():
        body = "(no text)" if not files else "(see the attached files)"
    files.append(MailFile(name=ORIGINAL_NAME, content_type="message/rfc822", data=raw))
    return ParsedMail(
        message_id=ids[0][:900], sender=sender.strip().lower(),
        sender_name=name.strip()[:NAME_MAX] or None,
        subject=_cut(subject, SUBJECT_MAX) or "(no subject)", body=_cut(body, MAX_BODY_CHARS),
        to=_addresses(msg, "To"), cc=_addresses(msg, "Cc"),
        in_reply_to=message_ids(_header(msg, "In-Reply-To")),
        references=message_ids(_header(msg, "References")),
        files=tuple(files), automatic=automatic_reason(msg), bounces=_bounces(msg),
        headers={k: v for k in ("Delivered-To", "X-Original-To")
                 if (v := _header(msg, k)) is not None})


def headline(raw: bytes) -> tuple[str | None, str | None]:
    """The sender (its ``From`` as written) and the subject of a mail, as far as its
    headers can be read: what a quarantined mail is shown by, ``parse`` having refused
    it. Either is None when it is missing or unreadable."""
    try:
        msg = email.parser.BytesHeaderParser(policy=email.policy.default).parsebytes(raw)
    except Exception:  # the parser is lenient; anything it raises is malformed
        return None, None
    sender, subject = _header(msg, "From"), _header(msg, "Subject")
    return (None if not sender or not sender.strip() else _cut(sender.strip(), 320),
            None if not subject or not subject.strip() else _cut(subject.strip(), SUBJECT_MAX))


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit - 1].rstrip() + "…"


# --- threading -------------------------------------------------------------------------

_SUBJECT_REF = re.compile(r"\[#([a-z0-9]{6,32})\]")


def subject_ref(subject: str) -> str | None:
    """The ticket reference ``[#ref]`` in a subject, or None."""
    found = _SUBJECT_REF.search(subject.lower())
    return None if found is None else found.group(1)


def plus_token(mailbox_address: str, addresses: tuple[str, ...]) -> str | None:
    """The token of the first ``local+token@domain`` among ``addresses`` for the
    mailbox ``local@domain``, or None."""
    local, _, domain = mailbox_address.lower().partition("@")
    for address in addresses:
        a_local, _, a_domain = address.lower().partition("@")
        if a_domain == domain and a_local.startswith(local + "+"):
            token = a_local[len(local) + 1:]
            if re.fullmatch(r"[a-z0-9]{6,32}", token):
                return token
    return None


def tokened_address(mailbox_address: str, token: str) -> str:
    """The Reply-To address of a ticket: ``local+token@domain``."""
    local, _, domain = mailbox_address.partition("@")
    return f"{local}+{token}@{domain}"


def reply_subject(subject: str, token: str) -> str:
    """``Re: <subject> [#token]``, without piling up prefixes or references."""
    base = _SUBJECT_REF.sub("", subject).strip()
    while True:
        stripped = re.sub(r"(?i)^(re|aw|sv|fwd?)\s*:\s*", "", base)
        if stripped == base:
            break
        base = stripped
    return f"Re: {base} [#{token}]"


def is_own_address(address: str, own: Collection[str]) -> bool:
    """Whether ``address`` is one of the desk's mailboxes ``own`` (lower case), or a
    ``local+anything@domain`` of one."""
    a_local, _, a_domain = address.lower().partition("@")
    for mailbox in own:
        local, _, domain = mailbox.partition("@")
        if a_domain == domain and (a_local == local or a_local.startswith(local + "+")):
            return True
    return False


def reply_copies(requester: str, candidates: Iterable[str], own: Collection[str],
                 bouncing: Collection[str]) -> tuple[str, ...]:
    """The Cc of a reply mailed to ``requester``: each of ``candidates`` once (in order,
    by lower case), but never the requester, the desk's own addresses, an address that
    bounces (lower case), an erased one ('') or a no one's (``.invalid``)."""
    seen = {requester.lower()}
    out = []
    for address in candidates:
        key = address.strip().lower()
        if (not key or "@" not in key or key in seen or key.endswith(".invalid")
                or key in bouncing or is_own_address(key, own)):
            continue
        seen.add(key)
        out.append(key)
    return tuple(out)


def display_address(address: str, name: str | None) -> str:
    """An address header value with a display name, quoted as RFC 5322 needs."""
    local, _, domain = address.partition("@")
    return str(Address(display_name=name or "", username=local, domain=domain))


__all__ = ["MAX_BODY_CHARS", "ORIGINAL_NAME", "Bounce", "MailFile", "ParsedMail",
           "Unparseable", "automatic_reason", "display_address", "html_to_text",
           "is_own_address", "message_ids", "parse", "plus_token", "reply_copies",
           "reply_subject", "sanitize_html", "strip_quoted", "subject_ref",
           "tokened_address"]
