"""Headless Chromium for the console's browser tests: Debian's ``chromium``, found or
installed with apt, driven by Playwright for Python.

Playwright's own browser downloads (``playwright install``) are never used: they
fetch builds from outside the package registries. Debian's build is newer than the
one a Playwright release pins, which works for what these tests do (pages, clicks,
screenshots, WebSocket routing).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

CHROMIUM = Path("/usr/bin/chromium")
PACKAGES = ("chromium", "fonts-dejavu-core")
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"]
INSTALL_TIMEOUT = 600


class NoBrowser(RuntimeError):
    """Chromium is missing and could not be installed here."""


def chromium() -> Path:
    """The Chromium binary; installed with apt when it is missing and this process may
    (root, on Debian: how CI runs), else ``NoBrowser`` saying what to install."""
    if CHROMIUM.exists():
        return CHROMIUM
    apt = shutil.which("apt-get")
    if apt is None or os.geteuid() != 0:
        raise NoBrowser(f"{CHROMIUM} is missing: install Debian's {' and '.join(PACKAGES)} "
                        "(apt-get install chromium) to run the console's browser tests")
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    for command in ([apt, "update", "-qq"], [apt, "install", "-y", "-qq", *PACKAGES]):
        done = subprocess.run(command, env=env, capture_output=True, text=True,
                              timeout=INSTALL_TIMEOUT, check=False)
        if done.returncode != 0:
            raise NoBrowser(f"{' '.join(command)} failed: {done.stderr[-2000:]}")
    if not CHROMIUM.exists():
        raise NoBrowser(f"apt installed {PACKAGES} but {CHROMIUM} is still missing")
    return CHROMIUM


SCREENSHOTS_ENV = "HELPDESK_SCREENSHOTS"
"""Where the browser tests save their screenshots when set (``scripts/screenshots``
sets it to docs/screenshots/); otherwise a temporary folder, so a test run never
rewrites the tracked pictures."""


def screenshot_dir(temporary: Path) -> Path:
    """The folder the screenshots of this run go to: ``HELPDESK_SCREENSHOTS``, or
    ``temporary`` (the run's own)."""
    chosen = os.environ.get(SCREENSHOTS_ENV)
    folder = Path(chosen) if chosen else temporary
    folder.mkdir(parents=True, exist_ok=True)
    return folder
