"""Typed identifiers."""

from __future__ import annotations

from typing import NewType
from uuid import UUID

TenantId = NewType("TenantId", UUID)
TicketId = NewType("TicketId", UUID)
AgentId = NewType("AgentId", UUID)
ApiKeyId = NewType("ApiKeyId", UUID)
MessageId = NewType("MessageId", UUID)
