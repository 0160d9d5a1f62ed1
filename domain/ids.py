"""Typed identifiers.

Distinct ``NewType``s over ``uuid.UUID`` so mypy catches a ticket id passed where an
agent id is expected; at runtime they are plain UUIDs and cost nothing.
"""

from __future__ import annotations

import uuid
from typing import NewType

TenantId = NewType("TenantId", uuid.UUID)
TicketId = NewType("TicketId", uuid.UUID)
AgentId = NewType("AgentId", uuid.UUID)
ApiKeyId = NewType("ApiKeyId", uuid.UUID)
MessageId = NewType("MessageId", uuid.UUID)
ContactId = NewType("ContactId", uuid.UUID)
OrganizationId = NewType("OrganizationId", uuid.UUID)
GroupId = NewType("GroupId", uuid.UUID)

__all__ = ["AgentId", "ApiKeyId", "ContactId", "GroupId", "MessageId", "OrganizationId",
           "TenantId", "TicketId"]
