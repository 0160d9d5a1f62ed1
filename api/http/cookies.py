"""Refresh cookies: how a refresh token travels to a browser and is forgotten there.

Staff (``hd_refresh``, path ``/v1/auth``) and the customer portal
(``hd_portal_refresh``, path ``/v1/portal/auth``) keep their refresh tokens the same
way: httpOnly (page scripts never see it), ``SameSite=Strict``, scoped to the path of
the auth routes that read it, ``Secure`` when the request came over https, and living
as long as the token does.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from fastapi import Request, Response

from api.http.problems import problem_response
from handlers.errors import NotAuthenticated


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


STAFF_REFRESH = RefreshCookie("hd_refresh", "/v1/auth")
PORTAL_REFRESH = RefreshCookie("hd_portal_refresh", "/v1/portal/auth")

__all__ = ["PORTAL_REFRESH", "STAFF_REFRESH", "RefreshCookie"]
