"""Refresh cookies: how a refresh token travels to a browser and is forgotten there.

Staff (``hd_refresh``, path ``/v1/auth``) and the customer portal
(``hd_portal_refresh``, path ``/v1/portal/auth``) keep their refresh tokens the same
way: httpOnly (page scripts never see it), ``SameSite=Strict``, scoped to the path of
the auth routes that read it, ``Secure`` when the request came over https, and living
as long as the token does.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime
from typing import TypeVar

from fastapi import Request, Response

from api.http.problems import problem_response
from handlers.errors import NotAuthenticated

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class RefreshCookie:
    name: str
    path: str

    def set(self, response: Response, request: Request, token: str, expires_at: datetime,
            now: datetime) -> Response:
        response.set_cookie(self.name, token,
                            max_age=max(0, int((expires_at - now).total_seconds())),
                            path=self.path, httponly=True, samesite="strict",
                            secure=request.url.scheme == "https")
        return response

    def forget(self, response: Response, request: Request) -> Response:
        response.delete_cookie(self.name, path=self.path, httponly=True, samesite="strict",
                               secure=request.url.scheme == "https")
        return response

    def refused(self, request: Request, exc: NotAuthenticated) -> Response:
        """The 401 of a refused refresh: the cookie is spent or dead, so it is cleared."""
        return self.forget(problem_response(401, exc.code, exc.message,
                                            instance=request.url.path), request)

    async def rotate(self, request: Request, refresh: Awaitable[T],
                     reply: Callable[[T], Response],
                     on_refused: Callable[[], None] | None = None) -> Response:
        """Spend this cookie's refresh token (``refresh``, the handler's call): the
        ``reply`` for the session's next state, or the refusal's 401 with the cookie
        cleared (spent, expired or revoked: a replay has just revoked the whole
        session), after ``on_refused``."""
        try:
            done = await refresh
        except NotAuthenticated as exc:
            if on_refused is not None:
                on_refused()
            return self.refused(request, exc)
        return reply(done)


STAFF_REFRESH = RefreshCookie("hd_refresh", "/v1/auth")
PORTAL_REFRESH = RefreshCookie("hd_portal_refresh", "/v1/portal/auth")

__all__ = ["PORTAL_REFRESH", "STAFF_REFRESH", "RefreshCookie"]
