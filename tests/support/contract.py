"""What the OpenAPI document says of one answer, for tests that hold answers to it:
the headers an answer sends that its operation does not declare, and the declared
always-sent ones it lacks."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from api.http.answer_headers import CATALOGUE

WATCHED = frozenset(h.name.lower() for h in CATALOGUE)
"""The headers the API sets on purpose (``api.http.answer_headers.CATALOGUE``)."""


def _resolve(document: dict[str, Any], node: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in node:
        target: Any = document
        for part in node["$ref"].removeprefix("#/").split("/"):
            target = target[part]
        node = target
    return node


def declared_headers(document: dict[str, Any], method: str, template: str,
                     status: int) -> dict[str, dict[str, Any]]:
    """The headers the document declares on ``status`` of the operation (lower-case)."""
    responses = document["paths"][template][method.lower()]["responses"]
    response = responses.get(str(status)) or responses.get("default") or {}
    return {name.lower(): _resolve(document, h)
            for name, h in response.get("headers", {}).items()}


def header_drift(document: dict[str, Any], method: str, template: str, status: int,
                 headers: Mapping[str, str]) -> list[str]:
    """What is wrong with the headers of one answer: a watched header sent but not
    declared on its status, or a required one declared but not sent."""
    declared = declared_headers(document, method, template, status)
    sent = {k.lower() for k in headers}
    problems = [f"{method} {template} {status} sends undeclared {name}"
                for name in sorted(sent & WATCHED - declared.keys())]
    problems += [f"{method} {template} {status} declares {name} required, did not send it"
                 for name, h in sorted(declared.items()) if h.get("required") and
                 name not in sent]
    return problems


__all__ = ["WATCHED", "declared_headers", "header_drift"]
