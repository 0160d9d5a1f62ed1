"""A local Slack Web API that checks requests as Slack would, and signed Events API calls.

``FakeSlack`` serves ``chat.postMessage`` and ``conversations.replies`` on 127.0.0.1 in
a thread of the test process (a worker process the test starts reaches it too). It
refuses what Slack would refuse, with Slack's answers: a token other than the
workspace's bot token (``invalid_auth``), a post that is not JSON (``invalid_arguments``
with the reason kept in ``refusals``), another channel (``channel_not_found``), a
``thread_ts`` that is no message of the channel (``thread_not_found``: Slack itself
would post a new top-level message, which the tests must see as a failure). It
answers ``{"ok": true, "ts": ...}`` and keeps every post it took; ``down`` makes it
answer 503, ``hold`` makes it take a post and then never answer (a worker killed in
the call).

``signed_event`` makes a request the way Slack's Events API does: JSON, with
``X-Slack-Request-Timestamp`` and a ``v0`` signature by the signing secret.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

from domain.slack import signature
from handlers import sla_check, slack_out
from scheduler.loop import LoopConfig, Scheduler
from scheduler.registry import Registry
from tests.support.smtp import free_port
from tests.support.wait import until

BOT_TOKEN = "xoxb-1111-2222-secrettoken"
SIGNING_SECRET = "8f742231b10e8888abcd99yyyzzz85a5"
CHANNEL = "C0HELPDESK"
BOT_USER = "UDESKBOT"


@dataclass
class Post:
    channel: str
    thread_ts: str
    text: str
    metadata: dict[str, Any]
    ts: str


@dataclass
class FakeSlack:
    token: str = BOT_TOKEN
    channel: str = CHANNEL
    mode: str = "ok"  # ok | down | hold | error:<code>
    posts: list[Post] = field(default_factory=list)
    refusals: list[str] = field(default_factory=list)
    threads: set[str] = field(default_factory=set)
    calls: list[str] = field(default_factory=list)
    held: threading.Event = field(default_factory=threading.Event)
    release: threading.Event = field(default_factory=threading.Event)
    lock: threading.Lock = field(default_factory=threading.Lock)
    port: int = field(default_factory=free_port)
    _next: int = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/api"

    def message(self) -> str:
        """A top-level message of the channel: its ts (the thread replies name)."""
        with self.lock:
            self._next += 1
            ts = f"1700000000.{self._next:06d}"
            self.threads.add(ts)
        return ts

    def posted(self, thread_ts: str) -> list[Post]:
        with self.lock:
            return [p for p in self.posts if p.thread_ts == thread_ts]

    def start(self) -> FakeSlack:
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                return None

            def _answer(self, status: int, body: dict[str, Any]) -> None:
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json; charset=utf-8")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_POST(self) -> None:
                owner.answer(self, "POST")

            def do_GET(self) -> None:
                owner.answer(self, "GET")

        self.server = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()
        return self

    def stop(self) -> None:
        self.release.set()
        self.server.shutdown()
        self.server.server_close()

    def _refuse(self, why: str) -> dict[str, Any]:
        with self.lock:
            self.refusals.append(why)
        return {"ok": False, "error": why.split(":")[0]}

    def answer(self, h: Any, method: str) -> None:
        path = urlsplit(h.path)
        name = path.path.rsplit("/", 1)[-1]
        length = int(h.headers.get("Content-Length") or 0)
        raw = h.rfile.read(length) if length else b""
        with self.lock:
            self.calls.append(name)
        if self.mode == "down":
            h._answer(503, {"ok": False, "error": "service_unavailable"})
            return
        if h.headers.get("Authorization") != f"Bearer {self.token}":
            h._answer(200, self._refuse("invalid_auth"))
            return
        if name == "chat.postMessage" and method == "POST":
            h._answer(200, self._post(h, raw))
        elif name == "conversations.replies" and method == "GET":
            h._answer(200, self._replies(parse_qs(path.query)))
        else:
            h._answer(404, {"ok": False, "error": "unknown_method"})

    def _post(self, h: Any, raw: bytes) -> dict[str, Any]:
        if not (h.headers.get("Content-Type") or "").startswith("application/json"):
            return self._refuse("invalid_arguments: not JSON")
        try:
            body = json.loads(raw)
        except ValueError:
            return self._refuse("invalid_json")
        if body.get("channel") != self.channel:
            return self._refuse(f"channel_not_found: {body.get('channel')}")
        if body.get("thread_ts") not in self.threads:
            return self._refuse(f"thread_not_found: {body.get('thread_ts')}")
        if not isinstance(body.get("text"), str) or not body["text"]:
            return self._refuse("no_text")
        if self.mode.startswith("error:"):
            return {"ok": False, "error": self.mode.split(":", 1)[1]}
        with self.lock:
            self._next += 1
            ts = f"1700000000.{self._next:06d}"
            self.posts.append(Post(body["channel"], body["thread_ts"], body["text"],
                                   body.get("metadata") or {}, ts))
        if self.mode == "hold":
            self.held.set()
            self.release.wait(60)
        return {"ok": True, "channel": body["channel"], "ts": ts,
                "message": {"text": body["text"], "ts": ts, "thread_ts": body["thread_ts"]}}

    def _replies(self, query: dict[str, list[str]]) -> dict[str, Any]:
        channel, ts = query.get("channel", [""])[0], query.get("ts", [""])[0]
        if channel != self.channel:
            return self._refuse(f"channel_not_found: {channel}")
        if ts not in self.threads:
            return self._refuse(f"thread_not_found: {ts}")
        with_meta = query.get("include_all_metadata", ["false"])[0] == "true"
        messages: list[dict[str, Any]] = [{"type": "message", "ts": ts, "user": "U1"}]
        for p in self.posted(ts):
            m: dict[str, Any] = {"type": "message", "ts": p.ts, "thread_ts": ts,
                                 "text": p.text, "bot_id": "BDESK"}
            if with_meta and p.metadata:
                m["metadata"] = p.metadata
            messages.append(m)
        return {"ok": True, "messages": messages, "has_more": False}


def signed_event(body: dict[str, Any], *, secret: str = SIGNING_SECRET,
                 at: float | None = None) -> tuple[bytes, dict[str, str]]:
    """``body`` as Slack sends it: its bytes and the headers that sign them."""
    raw = json.dumps(body).encode()
    timestamp = str(int(time.time() if at is None else at))
    return raw, {"Content-Type": "application/json",
                 "X-Slack-Request-Timestamp": timestamp,
                 "X-Slack-Signature": signature(secret, timestamp, raw)}


def message_event(event_id: str, ts: str, text: str, *, user: str = "UANN",
                  thread_ts: str | None = None, channel: str = CHANNEL,
                  **extra: Any) -> dict[str, Any]:
    """An ``event_callback`` of a message, as Slack's Events API sends one."""
    event: dict[str, Any] = {"type": "message", "channel": channel, "user": user,
                             "text": text, "ts": ts, "channel_type": "channel", **extra}
    if thread_ts is not None:
        event["thread_ts"] = thread_ts
    return {"token": "verification-token-unused", "team_id": "T0ACME", "api_app_id": "A0DESK",
            "type": "event_callback", "event_id": event_id, "event_time": int(time.time()),
            "authorizations": [{"team_id": "T0ACME", "user_id": BOT_USER, "is_bot": True}],
            "event": event}




async def run_slack_jobs(store: Any, clock: Any, api_url: str,
                         done: Callable[[], Awaitable[bool]], *, sla: bool = False) -> None:
    """A scheduler running ``slack.post`` (and ``sla.check``, with ``sla``) against
    ``api_url`` until ``done``; retries wait a minute of ``clock``."""
    registry = Registry()
    slack_out.register(registry, api_url=api_url, timeout=2.0, max_attempts=3)
    if sla:
        sla_check.register(registry)
    loop = Scheduler(store, clock, registry,
                     config=LoopConfig(concurrency=2, poll_interval=0.05,
                                       retry_base_seconds=60, retry_cap_seconds=60))
    task = asyncio.create_task(loop.run())
    try:
        await until(done, timeout=15)
    finally:
        await loop.stop()
        await task


__all__ = ["BOT_TOKEN", "BOT_USER", "CHANNEL", "SIGNING_SECRET", "FakeSlack", "Post",
           "message_event", "run_slack_jobs", "signed_event"]
