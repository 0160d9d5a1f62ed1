"""``helpdesk`` writing personal data in the clear, as it did before sealing: the
baseline of bench/sealing.py's HTTP figures.

The product's own code with one step left out: the API process loads no keyring, so
its store appends events without sealing their personal fields (and cannot erase).
Nothing in the product turns sealing off; this switch lives in the bench only. Run
as ``python -m bench.without_sealing serve --workers 1`` (one process: the patch
lives in this process only).
"""

from __future__ import annotations

import sys
from typing import Any

from api import root


async def _no_keyring(settings: Any, conn: Any) -> None:
    return None


if __name__ == "__main__":
    root.load_keyring = _no_keyring  # type: ignore[assignment]
    from api.cli.main import main

    sys.exit(main(sys.argv[1:]))
