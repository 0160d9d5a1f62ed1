"""The embedded server's first start seeds the demo and prints its keys; later starts
print the same keys and add nothing."""

from __future__ import annotations

import contextlib
import re
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.e2e.test_embedded_lifetime import _read, _start, _stop, _wait_for
from tests.support.pgserver import free_port

pytestmark = pytest.mark.slow

KEY = re.compile(r"^ +(\w+) +(.+?) +(hd_[A-Za-z0-9_-]{43})$", re.M)


@pytest.fixture
def data_dir() -> Iterator[Path]:
    """Under /tmp, so the server's system user can reach it when the tests run as root."""
    path = Path(tempfile.mkdtemp(prefix="helpdesk-demo-"))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def _live(port: int) -> bool:
    try:
        return httpx.get(f"http://127.0.0.1:{port}/health/live", timeout=1).status_code == 200
    except httpx.TransportError:
        return False


@contextlib.contextmanager
def _serving(data_dir: Path) -> Iterator[tuple[str, str]]:
    """``serve`` on ``data_dir``: yields what it printed and its base URL; stops it."""
    port = free_port()
    with tempfile.TemporaryFile() as log:
        proc = _start(data_dir, "serve", "--port", str(port), log=log)
        try:
            _wait_for("serve", lambda: _live(port), proc, log)
            yield _read(log), f"http://127.0.0.1:{port}"
        finally:
            assert _stop(proc) == 0, _read(log)


def test_first_start_seeds_the_demo_and_every_start_prints_its_keys(data_dir: Path) -> None:
    with _serving(data_dir) as (printed, base):
        assert f"{base}/console/" in printed
        assert "Tidewater Support" in printed and "Harbor Bikes" in printed
        found = KEY.findall(printed)
        assert len(found) == 13
        keys = {(role, who): secret for role, who, secret in found}
        analyst = {"Authorization": f"Bearer {keys[('analyst', 'Support analytics')]}"}
        me = httpx.get(f"{base}/v1/auth/me", headers=analyst)
        assert me.status_code == 200 and me.json()["tenant"]["name"] == "Tidewater Support"
        # The small tenant's admin sees its five tickets, none of the other tenant's.
        nils = {"Authorization": f"Bearer {keys[('admin', 'Nils Berg')]}"}
        small = httpx.get(f"{base}/v1/tickets", params={"limit": 100}, headers=nils)
        assert small.status_code == 200 and len(small.json()["data"]) == 5
        assert (data_dir / "demo.json").stat().st_mode & 0o077 == 0
        console = httpx.get(f"{base}/console/")
        assert console.status_code == 200 and "content-security-policy" in console.headers

    with _serving(data_dir) as (again, _):
        assert KEY.findall(again) == found
