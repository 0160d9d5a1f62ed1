"""A real SMTP server (aiosmtpd) on 127.0.0.1 that records every mail it accepts.

Started once per test session (the ``smtp_server`` fixture of tests/conftest.py); a
test reads what arrived for the recipients it made up, so tests sharing the server do
not see each other's mail.
"""

from __future__ import annotations

import email
import email.policy
import socket
import threading
from dataclasses import dataclass
from email.message import EmailMessage
from typing import Any

from aiosmtpd.controller import Controller


@dataclass(frozen=True)
class Delivered:
    mail_from: str
    rcpt_tos: tuple[str, ...]
    data: bytes

    def message(self) -> EmailMessage:
        parsed = email.message_from_bytes(self.data, policy=email.policy.default)
        assert isinstance(parsed, EmailMessage)
        return parsed


class _Recorder:
    def __init__(self, owner: SmtpServer) -> None:
        self.owner = owner

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
        data = envelope.original_content or envelope.content
        with self.owner.lock:
            self.owner.delivered.append(Delivered(envelope.mail_from,
                                                  tuple(envelope.rcpt_tos), bytes(data)))
        return "250 2.0.0 Ok: queued"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class SmtpServer:
    """aiosmtpd's Controller in its own thread, recording into ``delivered``."""

    def __init__(self) -> None:
        self.delivered: list[Delivered] = []
        self.lock = threading.Lock()
        self.port = free_port()
        self.controller = Controller(_Recorder(self), hostname="127.0.0.1", port=self.port)

    def start(self) -> SmtpServer:
        self.controller.start()
        return self

    def stop(self) -> None:
        self.controller.stop()

    def to(self, address: str) -> list[Delivered]:
        """What arrived for ``address``."""
        with self.lock:
            return [d for d in self.delivered if address in d.rcpt_tos]
