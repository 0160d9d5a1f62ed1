"""Signing in over HTTP, one shape for staff and for the customer portal.

A ``SignInRoutes`` is what one kind of sign-in is at the edge: the session kind the
handlers run (``handlers.sessions``: the rules, the throttle of failed sign-ins), the
refresh cookie its browser keeps, the access tokens it hands out, and the fields its
answer names the session's holder by. ``api/routes/auth.py`` and
``api/routes/portal.py`` each declare their routes and call theirs.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from fastapi import Request, Response

from api.http.cookies import RefreshCookie
from api.http.reply import JsonReply
from api.http.tokens import AccessTokens
from api.root import Services, session_lifetimes
from api.schemas.sign_in import SignInIn
from handlers import sessions


@dataclass(frozen=True, slots=True)
class SignInRoutes:
    kind: sessions.SessionKind
    cookie: RefreshCookie
    tokens: Callable[[Services], AccessTokens]
    role: str | None
    """The role its access tokens carry; None: the session's (an agent's role)."""
    holder: Callable[[sessions.SignedIn], Mapping[str, Any]]
    """The answer's fields that name the holder (and what else this kind tells)."""

    def reply(self, request: Request, services: Services, done: sessions.SignedIn
              ) -> Response:
        """The access token in the body, the refresh token in its cookie."""
        now = services.clock.now()
        tokens = self.tokens(services)
        token, expires = tokens.issue(tenant_id=done.tenant_id, agent_id=done.holder_id,
                                      session_id=done.session_id,
                                      role=self.role or done.role, now=now)
        response = JsonReply(200, {
            "access_token": token, "token_type": "Bearer",
            "expires_in": int(tokens.ttl.total_seconds()),
            "expires_at": min(expires, done.session_expires_at),
            "refresh_expires_at": done.refresh_expires_at, "tenant_id": done.tenant_id,
            **self.holder(done),
        }, headers={"Cache-Control": "no-store"}).response()
        return self.cookie.set(response, request, done.refresh_token,
                               done.refresh_expires_at, now)

    async def sign_in(self, body: SignInIn, request: Request, services: Services
                      ) -> Response:
        """Sign in with the tenant (slug or id), e-mail and password; failures count
        against the account and the client's address."""
        command = sessions.SignIn(body.tenant, body.email.strip(), body.password,
                                  services.clock.now(),
                                  address=request.client.host if request.client else None)
        done = await sessions.sign_in(services.store, services.passwords,
                                      session_lifetimes(services.settings), command,
                                      self.kind)
        return self.reply(request, services, done)

    async def refresh(self, request: Request, services: Services, token: str | None,
                      on_refused: Callable[[], None] | None = None) -> Response:
        """Spend the cookie's refresh token for a new pair (a refused one clears it)."""
        return await self.cookie.rotate(
            request, sessions.refresh(services.store, session_lifetimes(services.settings),
                                      token, services.clock.now(), self.kind),
            lambda done: self.reply(request, services, done), on_refused=on_refused)


__all__ = ["SignInRoutes"]
