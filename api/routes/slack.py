"""Slack: the tenant's connection (admin), the Events API endpoint, a ticket's posts.

- ``/v1/integrations/slack``: connect a channel with the app's bot token and signing
  secret, change it, disconnect. The secrets are never returned (handlers/slack.py).
- ``POST /v1/inbound/slack/{integration_id}``: the app's Event Subscriptions Request
  URL. Every request must carry Slack's ``v0`` signature of its body, made within five
  minutes (``domain.slack.verify``); a bad or stale one is a 401. A ``url_verification``
  is answered with its challenge; a message event becomes a ticket or a message on one,
  once per ``event_id`` (handlers/slack_in.py).
- ``GET /v1/tickets/{id}/slack``: the posts a Slack ticket made to its thread, each with
  its delivery status.

See docs/slack.md.
"""

from __future__ import annotations

from typing import Any
from uuid import UUID

import orjson
from fastapi import APIRouter, Request, Response

from api.http import commands
from api.http.deps import Authorized, ServicesDep
from api.http.limits import whole_body
from api.http.problem_docs import errors
from api.http.problems import Problem
from api.http.reply import JsonReply
from api.http.routing import StrictRoute
from api.schemas.slack import SlackEventOut, SlackIn, SlackOut, TicketSlack
from domain.slack import SignatureRefused, verify
from eventstore.store import UnitOfWork
from handlers import slack, slack_in, slack_out

router = APIRouter(tags=["slack"], route_class=StrictRoute)

EVENT_MAX_BYTES = 1024 * 1024
"""The largest Events API request taken (Slack's are a few kilobytes)."""


@router.get("/v1/integrations/slack", response_model=SlackOut, responses=errors(404),
            summary="The Slack connection")
async def get_slack(principal: Authorized, services: ServicesDep) -> Response:
    async with commands.reading(services, principal) as s:
        doc = await slack.get_slack(s)
    if doc is None:
        raise Problem(404, "slack_not_connected", "the tenant has not connected Slack")
    return JsonReply(200, doc).response()


@router.put("/v1/integrations/slack", response_model=SlackOut,
            responses=errors(409, 413, 415), summary="Connect Slack, or change the connection")
async def put_slack(body: SlackIn, request: Request, principal: Authorized,
                    services: ServicesDep) -> Response:
    """Connects when the tenant has no connection, else changes it. ``bot_token`` and
    ``signing_secret`` are required to connect and kept when left out of a change;
    ``notices`` left out is kept too."""
    command = slack.ConnectSlack(
        channel_id=body.channel_id, bot_user_id=body.bot_user_id, bot_token=body.bot_token,
        signing_secret=body.signing_secret,
        notices=None if body.notices is None else body.notices.model_dump(),
        at=services.clock.now())

    async def work(uow: UnitOfWork) -> JsonReply:
        doc, _ = await slack.connect_slack(uow, command)
        return JsonReply(200, doc)

    safe = body.model_dump(mode="json", exclude_unset=True,
                           exclude={"bot_token", "signing_secret"})
    safe["secrets"] = [k for k in ("bot_token", "signing_secret") if k in body.model_fields_set]
    return await commands.run(request, services, principal, safe, work)


@router.delete("/v1/integrations/slack", response_model=SlackOut, responses=errors(404),
               summary="Disconnect Slack")
async def delete_slack(request: Request, principal: Authorized,
                       services: ServicesDep) -> Response:
    """No more events are taken in and nothing more is posted; the threads of Slack
    tickets are kept for a connection made again. The answer is what was disconnected."""
    at = services.clock.now()

    async def work(uow: UnitOfWork) -> JsonReply:
        return JsonReply(200, await slack.disconnect_slack(uow, at))

    return await commands.run(request, services, principal, None, work)


@router.post("/v1/inbound/slack/{integration_id}", response_model=SlackEventOut,
             responses=errors(400, 401, 413), summary="Take in a Slack Events API request")
async def inbound_slack(integration_id: UUID, request: Request,
                        services: ServicesDep) -> Response:
    """Slack's signed request, as it sent it: checked against the connection's signing
    secret (``X-Slack-Signature``, ``X-Slack-Request-Timestamp``, five minutes' window)
    before anything is read. The same ``event_id`` again does nothing twice."""
    raw = await whole_body(request, EVENT_MAX_BYTES,
                           f"an event is at most {EVENT_MAX_BYTES} bytes",
                           "the request was cut off")
    async with services.pool.acquire() as conn:
        found = await slack.inbound_secret(conn, services.store.keyring, integration_id)
    if found is None:
        raise Problem(401, "invalid_slack_signature", "no such Slack connection")
    tenant, secret = found
    at = services.clock.now()
    try:
        verify(secret, request.headers.get("x-slack-request-timestamp"),
               request.headers.get("x-slack-signature"), raw, at.timestamp())
    except SignatureRefused as exc:
        raise Problem(401, "invalid_slack_signature", exc.reason) from exc
    try:
        payload = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise Problem(400, "malformed_json", "the request body is not JSON") from exc
    if not isinstance(payload, dict):
        raise Problem(400, "malformed_json", "the request body is not a JSON object")
    if payload.get("type") == "url_verification":
        return JsonReply(200, {"challenge": str(payload.get("challenge") or "")}).response()
    if payload.get("type") != "event_callback":
        return JsonReply(200, {"outcome": "ignored",
                               "reason": f"a {payload.get('type')} request"}).response()
    taken = await slack_in.take_event(services.store, tenant, payload, at)
    return JsonReply(200, _taken(taken)).response()


def _taken(taken: slack_in.EventTaken) -> dict[str, Any]:
    return {"outcome": taken.outcome, "reason": taken.reason, "ticket_id": taken.ticket_id,
            "message_id": taken.message_id}


@router.get("/v1/tickets/{ticket_id}/slack", response_model=TicketSlack,
            responses=errors(404), summary="The ticket's posts to its Slack thread")
async def ticket_slack(ticket_id: UUID, principal: Authorized,
                       services: ServicesDep) -> Response:
    """Oldest first: each reply and notice posted to the thread, with its status
    (``queued``, ``sent`` with Slack's ``ts``, ``dead`` with the reason)."""
    async with commands.reading(services, principal) as s:
        data = await slack_out.posts_of_ticket(s, ticket_id)
    if data is None:
        raise Problem(404, "not_found", f"no ticket {ticket_id}")
    return JsonReply(200, {"data": data}).response()


__all__ = ["EVENT_MAX_BYTES", "router"]
