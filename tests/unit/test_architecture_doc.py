"""docs/architecture.md names only files and code that exist: every path in it is a
file or folder of the project, every dotted name an importable module or an attribute
of one, so a rename that leaves the page behind fails here."""

from __future__ import annotations

import importlib
import re
from pathlib import Path

ROOT = Path(__file__).parents[2]
DOC = ROOT / "docs" / "architecture.md"
PACKAGES = ("api", "handlers", "domain", "eventstore", "projections", "scheduler")


def _names() -> list[str]:
    return re.findall(r"`([^`\s]+)`", DOC.read_text())


def test_every_path_it_names_exists():
    paths = [n for n in _names() if "/" in n and n.split("/")[0] in (*PACKAGES, "docs",
                                                                       "tests")]
    assert paths, "the page names no path"
    for name in paths:
        path = name.split(":")[0].rstrip("/")
        assert (ROOT / path).exists(), f"docs/architecture.md names {name}, which is not there"


def test_every_dotted_name_it_names_resolves():
    dotted = [n.rstrip("()") for n in _names()
              if re.fullmatch(r"[a-z_]+(\.[A-Za-z_]+)+(\(\))?", n) and n.split(".")[0] in PACKAGES]
    assert dotted, "the page names no module"
    for name in dotted:
        parts = name.split(".")
        for cut in range(len(parts), 0, -1):
            try:
                obj: object = importlib.import_module(".".join(parts[:cut]))
            except ModuleNotFoundError:
                continue
            for attr in parts[cut:]:
                assert hasattr(obj, attr), f"docs/architecture.md names {name}: no {attr}"
                obj = getattr(obj, attr)
            break
        else:
            raise AssertionError(f"docs/architecture.md names {name}, which is no module")
