"""The docs' examples run, as a reader would run them, against a real server.

A fenced ``sh`` or ``python`` block in docs/*.md right after the (invisible) line
``<!-- runnable -->`` or ``<!-- runnable: prints TEXT -->`` is run here, each doc's
blocks in order against one server and one tenant, as a reader following the page
would: ``sh`` blocks with bash (``-e``, ``pipefail``), ``python`` blocks with this
interpreter, the repository on the path. They find the server as a reader's would:
``$HELPDESK_URL`` and ``$HELPDESK_KEY`` (an admin key of the tenant) in the
environment, and ``http://127.0.0.1:8000`` (``ws://`` too), the address
``./scripts/serve`` listens on, is replaced by the test server's.

A block passes when it exits 0 and, with ``prints``, its output holds TEXT. A block
that keeps running (the live feed) passes as soon as its output holds TEXT, and is
then stopped. Meanwhile the desk is kept busy, a ticket opened every half second, so
that a feed example has events to print.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from fastapi import FastAPI

from handlers.tenants import NewTenant
from tests.e2e.conftest import NEW_TICKET, auth
from tests.support.live import serve

pytestmark = pytest.mark.slow  # starts a server, curl and Python processes

ROOT = Path(__file__).resolve().parents[2]
DEFAULT_URL = "http://127.0.0.1:8000"
_MARK = re.compile(r"^<!-- runnable(?:: prints (?P<prints>.+?))? -->\n"
                   r"```(?P<lang>sh|python)\n(?P<code>.*?)^```$", re.M | re.S)
TIMEOUT = 60.0


@dataclass(frozen=True, slots=True)
class Example:
    doc: str
    line: int
    lang: str
    code: str
    prints: str | None


def examples(text: str, doc: str) -> list[Example]:
    return [Example(doc, text.count("\n", 0, m.start()) + 2, m.group("lang"),
                    m.group("code"), m.group("prints"))
            for m in _MARK.finditer(text)]


DOCS = {doc.name: examples(doc.read_text(), doc.name)
        for doc in sorted((ROOT / "docs").glob("*.md"))}
RUNNABLE = sorted(name for name, found in DOCS.items() if found)


def test_the_docs_have_runnable_examples_and_every_mark_is_on_a_block():
    assert {"api.md", "websocket.md"} <= set(RUNNABLE)
    for doc in (ROOT / "docs").glob("*.md"):
        text = doc.read_text()
        assert text.count("<!-- runnable") == len(DOCS[doc.name]), (
            f"{doc.name}: a runnable mark that is not right before a sh or python block")


async def _busy_desk(base: str, key: str, stop: asyncio.Event) -> None:
    async with httpx.AsyncClient(base_url=base, headers=auth(key)) as client:
        while not stop.is_set():
            await client.post("/v1/tickets", json=NEW_TICKET)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), 0.5)


async def run_example(example: Example, base: str, key: str) -> str:
    """Run one block; its output (stdout and stderr), or a failure naming the block."""
    code = example.code.replace(DEFAULT_URL, base).replace(
        DEFAULT_URL.replace("http", "ws", 1), base.replace("http", "ws", 1))
    env = {"PATH": os.environ["PATH"], "HOME": os.environ.get("HOME", "/tmp"),
           "LANG": "C.UTF-8", "PYTHONPATH": str(ROOT),
           "HELPDESK_URL": base, "HELPDESK_KEY": key}
    with tempfile.TemporaryDirectory() as tmp:
        if example.lang == "sh":
            argv = ["bash", "-e", "-o", "pipefail", "-c", code]
        else:
            script = Path(tmp) / "example.py"
            script.write_text(code)
            argv = [sys.executable, "-u", str(script)]
        process = await asyncio.create_subprocess_exec(
            *argv, cwd=tmp, env=env, stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT)
        assert process.stdout is not None
        output = b""
        deadline = time.monotonic() + TIMEOUT
        where = f"docs/{example.doc}:{example.line} ({example.lang})"
        status: int | None = None
        try:
            while status is None:
                left = deadline - time.monotonic()
                assert left > 0, f"{where} did not finish in {TIMEOUT} s:\n{output.decode()}"
                with contextlib.suppress(TimeoutError):
                    chunk = await asyncio.wait_for(process.stdout.read(65536), left)
                    output += chunk
                    if not chunk:
                        status = await process.wait()
                    elif example.prints is not None and example.prints in output.decode(
                            errors="replace"):
                        try:
                            status = await asyncio.wait_for(process.wait(), 2.0)
                        except TimeoutError:
                            # Still running (the live feed): it showed what it shows.
                            return output.decode(errors="replace")
                        output += await process.stdout.read()
        finally:
            if process.returncode is None:
                process.terminate()
                await process.wait()
    text = output.decode(errors="replace")
    assert status == 0, f"{where} exited {status}:\n{text}"
    if example.prints is not None:
        assert example.prints in text, f"{where} did not print {example.prints!r}:\n{text}"
    return text


@pytest.mark.parametrize("doc", RUNNABLE)
async def test_a_docs_examples_run_against_a_live_server(doc: str, app: FastAPI,
                                                         tenant: NewTenant):
    key = tenant.admin_key.secret
    with serve(app) as base:
        stop = asyncio.Event()
        busy = asyncio.create_task(_busy_desk(base, key, stop))
        try:
            for example in DOCS[doc]:
                await run_example(example, base, key)
        finally:
            stop.set()
            await busy
