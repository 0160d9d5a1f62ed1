"""A rule's ``send_mail`` action: whom it mails, with what, queued once.

The mail is notification mail of kind ``rule`` (``handlers.mail_notify``): one
``mail_notifications`` row per recipient and one ``mail.notify`` job each, made in the
transaction of the rule's firing (the rule engine's batch with its checkpoint, or a
time rule's job with the episode it claims), so the mail is queued exactly when the
firing commits, and sent by the job after that commit. Each row's dedupe key names the
firing, the action and the recipient: a batch done again after a crash makes nothing
twice.

Recipients: the requester (not an address of no one, ``.invalid``), the assignee, or
the active members of a group; an agent who is deactivated is mailed nothing. The
rule's template travels sealed in the row's values, so the mail says what the rule
said when it fired, even if the rule is changed before the job runs.

A tenant with no mailbox that has SMTP cannot save such a rule (``check_can_send``);
if its mailboxes go later, the firing queues nothing and says so in its ``detail``.
"""

from __future__ import annotations

from typing import Any
from uuid import UUID

from domain.mail_templates import RULE_KIND
from domain.ticket import Ticket
from eventstore.store import UnitOfWork
from handlers import mail_notify
from handlers.errors import Invalid
from projections.groups import load_group

NO_MAILBOX = "no mailbox with outbound SMTP"


async def check_can_send(uow: UnitOfWork, where: str) -> None:
    """A 422 naming ``where`` unless the tenant has a mailbox that can send."""
    if await mail_notify.sending_mailbox(uow.conn, uow.tenant_id) is None:
        raise Invalid("invalid_rule", f"{where}: the tenant has {NO_MAILBOX} to send from "
                      "(add one at /v1/mailboxes)", field=where,
                      reason=f"the tenant has {NO_MAILBOX}")


async def _recipients(uow: UnitOfWork, value: dict[str, Any], ticket: Ticket
                      ) -> list[tuple[str, str]]:
    """(address, name) of each recipient."""
    conn, tenant = uow.conn, uow.tenant_id
    if value["to"] == "requester":
        email = ticket.requester.email
        if not email or email.lower().endswith(".invalid"):
            return []  # no one's address (a Slack user's contact: docs/slack.md)
        return [(email, ticket.requester.name or email)]
    if value["to"] == "assignee":
        ids = [] if ticket.assignee is None else [ticket.assignee]
    else:
        group = await load_group(conn, tenant, UUID(value["group_id"]))
        ids = [] if group is None else list(group.members)
    if not ids:
        return []
    agents = await conn.fetch(mail_notify.Q["notice_agents"], tenant, ids)
    return [(a["email"], a["name"] or a["email"]) for a in agents]


async def queue_rule_mail(uow: UnitOfWork, value: dict[str, Any], ticket: Ticket,
                          firing: str, at: Any) -> str | None:
    """Queue the action's mail on ``ticket``; ``firing`` names the firing once (the rule,
    its trigger and the action's place). Returns what the firing's detail should say
    when no mail was queued, else None."""
    recipients = await _recipients(uow, value, ticket)
    if not recipients:
        return f"send_mail to the {value['to']}: nobody to mail"
    thread = await uow.conn.fetchrow(mail_notify.Q["mail_thread_get"], uow.tenant_id,
                                     ticket.id)
    base = {"subject": ticket.subject, "ticket_id": str(ticket.id),
            "requester_name": ticket.requester.name or ticket.requester.email,
            "requester_email": ticket.requester.email, "priority": str(ticket.priority),
            "state": str(ticket.state),
            "reference": f"#{thread['token']}" if thread is not None else "",
            "template_subject": value["template"]["subject"],
            "template_body": value["template"]["body"]}
    notices = [mail_notify.Notice(RULE_KIND, email, {**base, "name": name, "email": email},
                                  f"rule:{firing}:{email.lower()}", ticket.id)
               for email, name in dict(recipients).items()]
    made = await mail_notify.queue_notices(uow, notices, at, ticket.id)
    if made is None:
        return f"send_mail: {NO_MAILBOX}; nothing queued"
    return None


__all__ = ["NO_MAILBOX", "check_can_send", "queue_rule_mail"]
