"""Posts to Slack: the ``slack.post`` job that puts an agent's public reply, or a notice,
in a Slack ticket's thread, once.

The job is enqueued by the appending statement of the event (migration 0760), so it
exists exactly when the reply committed and the request never waits for Slack. The
job, claimed like every job (SKIP LOCKED, lease, backoff):

1. reads the event and the ticket's thread and makes, once, the post's row, committed
   before any attempt; a row already ``sent`` or ``dead`` is left alone;
2. marks the row in doubt (committed), then calls ``chat.postMessage`` with the bot
   token, the channel, the thread's ``thread_ts``, the text, and the row's id in the
   message's metadata; Slack's ``ts`` is recorded and the row is ``sent``;
3. a row found in doubt (its worker was killed in the call, or the answer was lost) is
   looked for in the thread first (``conversations.replies`` with metadata): found,
   its ``ts`` is recorded and nothing is posted again. So a reply is posted once even
   when the worker dies between Slack taking it and the desk hearing so.

Failures settle the row as every outbound delivery does (``handlers.delivery``): a
refusal that retrying cannot mend (a revoked token, a channel the bot is not in) is
``dead`` at once, anything else is retried with backoff until the last attempt.
"""

from __future__ import annotations

import functools
import uuid
from pathlib import Path
from typing import Any
from uuid import UUID

import httpx
import orjson

from domain.slack import notice_text
from eventstore.sqlfile import load_queries
from eventstore.store import UnitOfWork
from eventstore.types import StoreActor
from handlers import delivery, slack
from handlers.ticket_state import load_ticket
from scheduler.queue import Job
from scheduler.registry import JobContext, Registry

Q = load_queries(Path(__file__).with_name("slack.sql"))

KIND = "slack.post"
ACTOR = StoreActor("system", "slack")
API_URL = "https://slack.com/api"
TIMEOUT = 10.0
METADATA_TYPE = "helpdesk_post"
PERMANENT = frozenset({
    "invalid_auth", "not_authed", "account_inactive", "token_revoked", "token_expired",
    "no_permission", "missing_scope", "channel_not_found", "not_in_channel", "is_archived",
    "msg_too_long", "no_text", "restricted_action", "ekm_access_denied"})
"""``chat.postMessage`` errors that another attempt would meet again."""


class SlackFailed(delivery.DeliveryFailed):
    """Slack did not take the call; ``in_doubt``: it may have, the answer was lost."""

    def __init__(self, reason: str, *, permanent: bool = False, in_doubt: bool = False
                 ) -> None:
        super().__init__(reason, permanent=permanent)
        self.in_doubt = in_doubt


def escape(text: str) -> str:
    """Text as Slack reads it: ``&``, ``<`` and ``>`` are markup unless escaped."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


async def _call(client: httpx.AsyncClient, method: str, url: str, token: str,
                **kwargs: Any) -> dict[str, Any]:
    """One Web API call's answer (``ok`` true), else ``SlackFailed``."""
    headers = {"Authorization": f"Bearer {token}"}
    try:
        if method == "POST":
            r = await client.post(url, headers={
                **headers, "Content-Type": "application/json; charset=utf-8"},
                content=orjson.dumps(kwargs["json"]))
        else:
            r = await client.get(url, headers=headers, params=kwargs["params"])
    except httpx.ConnectError as exc:
        raise SlackFailed(f"Slack is unreachable: {exc}"[:400]) from exc
    except httpx.HTTPError as exc:  # sent, and the answer lost or late
        raise SlackFailed(f"{type(exc).__name__}: {exc}"[:400], in_doubt=True) from exc
    if r.status_code == 429 or r.status_code >= 500:
        raise SlackFailed(f"Slack answered {r.status_code}", in_doubt=r.status_code >= 500)
    try:
        answer = orjson.loads(r.content)
    except orjson.JSONDecodeError as exc:
        raise SlackFailed(f"Slack answered {r.status_code} without JSON",
                          in_doubt=True) from exc
    if not isinstance(answer, dict) or answer.get("ok") is not True:
        error = str(answer.get("error") if isinstance(answer, dict) else answer)
        raise SlackFailed(f"Slack refused it: {error}"[:400], permanent=error in PERMANENT)
    return answer


async def post_message(api_url: str, token: str, channel: str, thread_ts: str, text: str,
                       post_id: UUID, timeout: float = TIMEOUT) -> str:
    """``chat.postMessage`` in the thread; the ``ts`` Slack gave the message."""
    body = {"channel": channel, "thread_ts": thread_ts, "text": text,
            "metadata": {"event_type": METADATA_TYPE,
                         "event_payload": {"post_id": str(post_id)}}}
    async with httpx.AsyncClient(timeout=timeout) as client:
        answer = await _call(client, "POST", f"{api_url}/chat.postMessage", token, json=body)
    ts = answer.get("ts")
    if not isinstance(ts, str):
        raise SlackFailed("Slack took the post without a ts", in_doubt=True)
    return ts


async def find_post(api_url: str, token: str, channel: str, thread_ts: str, post_id: UUID,
                    timeout: float = TIMEOUT) -> str | None:
    """The ``ts`` of the message the desk posted as ``post_id`` in the thread, if any."""
    params = {"channel": channel, "ts": thread_ts, "include_all_metadata": "true",
              "limit": "200"}
    async with httpx.AsyncClient(timeout=timeout) as client:
        for _ in range(50):  # 10,000 replies: no thread of a ticket is that long
            answer = await _call(client, "GET", f"{api_url}/conversations.replies", token,
                                 params=params)
            for m in answer.get("messages") or []:
                meta = m.get("metadata") or {}
                if (meta.get("event_type") == METADATA_TYPE and m.get("ts")
                        and (meta.get("event_payload") or {}).get("post_id") == str(post_id)):
                    return str(m["ts"])
            cursor = (answer.get("response_metadata") or {}).get("next_cursor")
            if not answer.get("has_more") or not cursor:
                return None
            params = {**params, "cursor": cursor}
    return None


def _what(event: Any) -> tuple[str, str, UUID | None] | None:
    """(kind, dedupe key, message id) of the post an event calls for."""
    if event.type == "MessageAdded":
        return "reply", f"slack:{event.data['message_id']}", UUID(event.data["message_id"])
    if event.type in ("TicketOpened", "TicketSplitFrom"):
        return "ticket_opened", f"slack:notice:{event.seq}", None
    if event.type == "SlaBreached":
        return "sla_breached", f"slack:notice:{event.seq}", None
    return None


async def deliver(ctx: JobContext, job: Job, *, api_url: str = API_URL,
                  timeout: float = TIMEOUT) -> None:
    """Job handler for ``slack.post`` (module docstring)."""
    assert job.tenant_id is not None
    tenant, store = job.tenant_id, ctx.store
    ticket_id, seq = UUID(job.payload["ticket_id"]), int(job.payload["seq"])
    at = ctx.clock.now()
    async with store.unit_of_work(tenant, ACTOR) as uow:
        event = next((e for e in await uow.read_stream(ticket_id) if e.seq == seq), None)
        what = None if event is None else _what(event)
        # A split-off ticket has no thread: its opening is told in its source's
        # (migration 0910).
        source = (event.data["source_id"] if event is not None
                  and event.type == "TicketSplitFrom" else None)
        split_off = source is not None
        thread = await uow.conn.fetchrow(Q["thread_of_ticket"], tenant,
                                         ticket_id if source is None else UUID(source))
        ticket = await load_ticket(uow.conn, tenant, ticket_id)
        if event is None or what is None or thread is None or ticket is None:
            return
        kind, key, message_id = what
        access = await slack.slack_access(uow)
        row = await uow.conn.fetchrow(Q["post_take"], tenant, key)
        if row is None:
            status, reason = ("queued", None) if access is not None else (
                "dead", "Slack is not connected")
            await uow.conn.execute(Q["post_insert"], tenant, uuid.uuid4(), key, kind, ticket_id,
                                   message_id, thread["channel_id"], thread["thread_ts"],
                                   status, reason, at)
            row = await uow.conn.fetchrow(Q["post_take"], tenant, key)
            assert row is not None
        if row["status"] in ("sent", "dead"):
            return
        if access is None:
            await uow.conn.execute(Q["post_done"], tenant, row["id"], "dead",
                                   "Slack is not connected", None, None, row["in_doubt"])
            return
        if kind == "reply":
            text = escape(event.data["body"])
        else:
            text = escape(notice_text("ticket_split" if split_off else kind, ticket.subject,
                                      event.data.get("metric")))
    post_id, channel, thread_ts = row["id"], row["channel_id"], row["thread_ts"]
    token = access.bot_token
    doubt = bool(row["in_doubt"])

    async def send() -> str:
        nonlocal doubt
        if doubt:  # a failed look-up leaves it in doubt
            found = await find_post(api_url, token, channel, thread_ts, post_id,
                                    timeout)
            if found is not None:
                return found
        async with store.unit_of_work(tenant, ACTOR) as uow:
            await uow.conn.execute(Q["post_in_doubt"], tenant, post_id)
        doubt = True
        try:
            return await post_message(api_url, token, channel, thread_ts, text,
                                      post_id, timeout)
        except SlackFailed as exc:
            doubt = exc.in_doubt
            raise

    async def settle(uow: UnitOfWork, status: str, reason: str | None, ts: str | None
                     ) -> None:
        sent = status == "sent"
        await uow.conn.execute(Q["post_done"], tenant, post_id, status, reason, ts,
                               at if sent else None, doubt and not sent)
        await slack.record_use(uow.conn, tenant, at, reason)

    await delivery.attempt(store, tenant, ACTOR, job, send, settle, (SlackFailed,))


async def posts_of_ticket(uow: UnitOfWork, ticket_id: UUID) -> list[dict[str, Any]] | None:
    """A ticket's posts to its thread, oldest first, each with its status; None for no
    such ticket."""
    if await load_ticket(uow.conn, uow.tenant_id, ticket_id) is None:
        return None
    return [{"id": r["id"], "kind": r["kind"], "message_id": r["message_id"],
             "channel_id": r["channel_id"], "thread_ts": r["thread_ts"],
             "status": r["status"], "ts": r["ts"], "reason": r["reason"],
             "attempts": r["attempts"], "created_at": r["created_at"],
             "sent_at": r["sent_at"]}
            for r in await uow.conn.fetch(Q["posts_of_ticket"], uow.tenant_id, ticket_id)]


def register(registry: Registry, *, api_url: str = API_URL, timeout: float = TIMEOUT,
             max_attempts: int | None = None) -> None:
    """Handle ``slack.post`` jobs in this process's scheduler."""
    registry.register(KIND, functools.partial(deliver, api_url=api_url.rstrip("/"),
                                              timeout=timeout), max_attempts=max_attempts)


__all__ = ["KIND", "SlackFailed", "deliver", "escape", "find_post", "post_message",
           "posts_of_ticket", "register"]
