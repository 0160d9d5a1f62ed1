"""A mail run is parsed in a process of its own (handlers/mail_in.py ``_parsed_run``);
that process ends when the process it parses for is gone without shutting it down (a
poller killed, a test worker's ``os._exit``), rather than staying behind."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

CHILD = r"""
import asyncio, os
from handlers import mail_in

RAW = (b"From: Ann <ann@example.com>\r\nTo: support@acme.test\r\nSubject: Hello\r\n"
       b"Message-ID: <one@example.com>\r\nContent-Type: text/plain\r\n\r\nText.\r\n")

async def main() -> None:
    [mail] = await mail_in._parsed_run([RAW])
    assert mail.sender == "ann@example.com", mail.sender
    print(*mail_in._PARSER[0]._processes, flush=True)

asyncio.run(main())
os._exit(0)  # as a killed process: no pool shut down
"""


def test_the_parsing_process_ends_with_the_process_it_parses_for() -> None:
    done = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, cwd=ROOT,
                          env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=60)
    assert done.returncode == 0, done.stderr.decode()
    [pid] = [int(p) for p in done.stdout.split()]
    deadline = time.monotonic() + 10
    while Path(f"/proc/{pid}").exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not Path(f"/proc/{pid}").exists(), f"the parsing process {pid} stayed behind"
