"""``python -m api.cli.openapi``: write the published contract, ``docs/openapi.json``.

The file is the OpenAPI document the app serves at ``/openapi.json``, committed so
that a change to the API shows in review as a diff of one file;
tests/e2e/test_contract.py holds it equal to what the app serves. ``--check`` only
says whether the file is current (exit 1 if not).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

CONTRACT = Path(__file__).resolve().parents[2] / "docs" / "openapi.json"


def document() -> dict[str, Any]:
    """The document an app serves (it does not depend on the process's settings)."""
    from api.app import create_app
    from api.config import ProcessSettings

    return create_app(ProcessSettings(_env_file=None)).openapi()  # type: ignore[call-arg]


def render(doc: dict[str, Any]) -> str:
    return json.dumps(doc, indent=2, ensure_ascii=False) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m api.cli.openapi",
                                     description="write docs/openapi.json")
    parser.add_argument("--check", action="store_true",
                        help="only check that the file is current")
    args = parser.parse_args(argv)
    text = render(document())
    if args.check:
        current = CONTRACT.exists() and CONTRACT.read_text() == text
        if not current:
            print(f"{CONTRACT} is not current: run python -m api.cli.openapi", file=sys.stderr)
        return 0 if current else 1
    CONTRACT.write_text(text)
    print(f"wrote {CONTRACT}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
