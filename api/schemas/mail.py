"""Bodies of the mail routes: mailboxes, their quarantine, a ticket's mail."""

from __future__ import annotations

from datetime import datetime
from typing import Literal
from uuid import UUID

from pydantic import BaseModel, ConfigDict, Field, model_validator

from api.schemas import PatchBody
from api.schemas.settings import TemplateKind
from domain.mail_templates import MAX_BODY, MAX_SUBJECT

_IN = ConfigDict(extra="forbid")
ADDRESS_PATTERN = r"^[A-Za-z0-9._%-]{1,64}@[A-Za-z0-9-]{1,63}(\.[A-Za-z0-9-]{1,63})+$"


class SmtpIn(BaseModel):
    """Outbound SMTP. ``password`` is write-only: left out on a change, the current one
    is kept; given as null, it is forgotten (no password)."""

    model_config = _IN

    host: str = Field(min_length=1, max_length=255, examples=["smtp.example.com"])
    port: int = Field(ge=1, le=65535, examples=[587])
    security: Literal["none", "starttls", "tls"] = "starttls"
    username: str | None = Field(default=None, max_length=320)
    password: str | None = Field(default=None, max_length=1000)


class ImapIn(BaseModel):
    """Inbound IMAP, polled by the scheduler. ``password`` is write-only: left out on a
    change, the current one is kept; given as null, it is forgotten (no password)."""

    model_config = _IN

    host: str = Field(min_length=1, max_length=255, examples=["imap.example.com"])
    port: int = Field(ge=1, le=65535, examples=[993])
    security: Literal["none", "starttls", "tls"] = "tls"
    username: str = Field(min_length=1, max_length=320)
    password: str | None = Field(default=None, max_length=1000)
    folder: str = Field(default="INBOX", min_length=1, max_length=200)


class DkimIn(BaseModel):
    """DKIM signing of the mailbox's outbound mail. ``private_key`` (an unencrypted PEM
    RSA key, 1024 bits or more) is write-only: left out on a change, the current one is
    kept (given as null it is a 422: ``dkim: null`` stops signing). It is checked when
    saved (422 naming the field at fault)."""

    model_config = _IN

    selector: str = Field(min_length=1, max_length=63, examples=["helpdesk"])
    domain: str = Field(min_length=1, max_length=253, examples=["example.com"],
                        description="The mailbox address's domain or one it belongs to.")
    private_key: str | None = Field(default=None, max_length=20_000)


class DkimOut(BaseModel):
    selector: str
    domain: str
    algorithm: str
    dns_name: str = Field(description="Where the public key is published: "
                          "`<selector>._domainkey.<domain>`.")
    dns_record: str = Field(description="The TXT record to publish there.")
    private_key_set: bool = Field(description="Whether a private key is stored (it is "
                                  "never shown).")


class ImapOut(BaseModel):
    host: str
    port: int
    security: str
    username: str
    folder: str
    password_set: bool = Field(description="Whether a password is stored (it is never "
                               "shown).")


class SmtpOut(BaseModel):
    host: str
    port: int
    security: str
    username: str | None
    password_set: bool = Field(description="Whether a password is stored (it is never "
                               "shown).")


class MailboxIn(BaseModel):
    model_config = _IN

    address: str = Field(max_length=254, pattern=ADDRESS_PATTERN,
                         examples=["support@example.com"],
                         description="Without a `+`: replies come back to `local+<token>@`.")
    name: str | None = Field(default=None, max_length=200)
    smtp: SmtpIn | None = None
    imap: ImapIn | None = None
    dkim: DkimIn | None = None


class MailboxPatch(PatchBody):
    """Only what is given changes; ``smtp: null`` stops outbound mail, ``imap: null``
    the polling, ``dkim: null`` the signing."""

    nullable = frozenset({"smtp", "imap", "dkim"})

    name: str | None = Field(default=None, min_length=1, max_length=200)
    smtp: SmtpIn | None = None
    imap: ImapIn | None = None
    dkim: DkimIn | None = None


class MailboxOut(BaseModel):
    """A mailbox; its secrets are never shown."""

    id: UUID
    address: str
    name: str | None
    smtp: SmtpOut | None
    imap: ImapOut | None
    dkim: DkimOut | None
    status: Literal["ok", "degraded"]
    last_error: str | None
    last_error_at: datetime | None
    version: int
    created_at: datetime
    updated_at: datetime


class MailboxCreated(MailboxOut):
    inbound_secret: str = Field(description="What `POST /v1/inbound/mail/{mailbox_id}` "
                                "takes as its bearer credential: shown this once.")
    inbound_url: str


class MailboxPage(BaseModel):
    data: list[MailboxOut]
    next_cursor: str | None


class ServerTrialOut(BaseModel):
    status: Literal["ok", "failed", "not_configured"]
    reason: str | None = Field(description="Why it failed, as the server or the "
                               "connection said.")


class MailboxTrialOut(BaseModel):
    """How each of a mailbox's servers answered a trial login."""

    smtp: ServerTrialOut
    imap: ServerTrialOut


class QuarantinedOut(BaseModel):
    id: UUID
    mailbox_id: UUID
    size: int
    reason: str
    from_: str | None = Field(alias="from", description="Its `From` header as written, "
                              "when it could be read.")
    subject: str | None = Field(description="Its subject, when it could be read.")
    attempts: int
    created_at: datetime
    retried_at: datetime | None


class QuarantinePage(BaseModel):
    data: list[QuarantinedOut]
    next_cursor: str | None


NoticeKind = Literal["invitation", "portal_link", "acknowledgement", "assignment", "breach",
                     "rule"]
NoticeStatus = Literal["queued", "sent", "dead"]


class NotificationOut(BaseModel):
    """A notification mail: what it tells of, to whom, and how its delivery went (its
    values, an invitation's token among them, are never shown)."""

    id: UUID
    kind: NoticeKind
    mailbox_id: UUID
    to: str = Field(description="The recipient ('' once erased).")
    ticket_id: UUID | None
    rfc_message_id: str
    status: NoticeStatus
    attempts: int
    last_error: str | None = Field(description="Why the last attempt failed, or why it "
                                   "is dead.")
    created_at: datetime
    sent_at: datetime | None


class NotificationPage(BaseModel):
    data: list[NotificationOut]
    next_cursor: str | None


class TakenInOut(BaseModel):
    """What became of a mail taken in."""

    outcome: Literal["ticket", "reply", "follow_up", "ignored", "bounce", "duplicate",
                     "quarantined"]
    reason: str | None
    ticket_id: UUID | None
    message_id: UUID | None
    mail_id: UUID | None


class MailOut(BaseModel):
    id: UUID
    mailbox_id: UUID
    direction: Literal["in", "out"]
    message_id: UUID | None = Field(description="The ticket message it is.")
    rfc_message_id: str
    from_: str = Field(alias="from")
    to: list[str]
    cc: list[str]
    status: str = Field(description="in: `ticket`, `reply`, `follow_up`; out: `queued`, "
                        "`sent`, `dead`.")
    reason: str | None
    attempts: int
    created_at: datetime
    sent_at: datetime | None


class TicketMail(BaseModel):
    data: list[MailOut]


class MailPreviewIn(BaseModel):
    """A notification mail to render: the tenant's template of ``kind``, with
    ``subject`` or ``body`` in its place when given (a template not yet saved), and
    ``data`` over the kind's sample values."""

    model_config = _IN

    kind: TemplateKind
    subject: str | None = Field(default=None, min_length=1, max_length=MAX_SUBJECT)
    body: str | None = Field(default=None, min_length=1, max_length=MAX_BODY)
    data: dict[str, str] = Field(default_factory=dict, max_length=50)

    @model_validator(mode="after")
    def _short_values(self) -> MailPreviewIn:
        if any(len(v) > 2000 for v in self.data.values()):
            raise ValueError("a data value is at most 2000 characters")
        return self


class MailPreviewOut(BaseModel):
    kind: str
    subject: str
    body: str
    html: str = Field(description="The HTML part the mail carries beside the text.")
    placeholders: dict[str, str] = Field(description="The kind's placeholders and what "
                                                     "each holds.")
    own: bool = Field(description="Whether the tenant has its own template of the kind.")
