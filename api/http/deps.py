"""FastAPI dependency aliases, all in one place."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request

from api.http.auth import Principal, authenticate, authorize, authorize_customer
from api.http.pagination import PageAsked, page_asked
from api.root import Services


async def get_services(request: Request) -> Services:
    # async, not def: FastAPI runs a plain function dependency in its thread pool,
    # a hand-off to another thread and back on every request.
    services: Services = request.state.services
    return services


ServicesDep = Annotated[Services, Depends(get_services)]
PrincipalDep = Annotated[Principal, Depends(authenticate)]
Authorized = Annotated[Principal, Depends(authorize)]
"""The caller, allowed by ``api.http.access`` to run the route it called."""
CustomerAuthorized = Annotated[Principal, Depends(authorize_customer)]
"""A contact signed in to the portal, allowed by ``api.http.access`` to run the route."""
Paging = Annotated[PageAsked, Depends(page_asked)]
"""The page a list is asked for (its ``limit`` and ``cursor``). FastAPI documents a
dependency's parameters after the route's own, so a list whose own filters follow
``limit`` and ``cursor`` in its documented parameters takes the two as its own."""
