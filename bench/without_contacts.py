"""``helpdesk`` as it opened tickets before requesters resolved to contacts: the
baseline of bench/http.py's contact figures.

The product's own code with one step left out: a new ticket's requester is kept as
given (no contact looked up or created), so the write path is what it was before,
on the same schema. (The requester lock rides in the command's first read, so the
baseline still takes it, at no round trip of its own.) Run as
``python -m bench.without_contacts serve --workers 1`` (one process: the patch lives in
this process only).
"""

from __future__ import annotations

import sys
from typing import Any

from handlers import tickets


async def _as_given(conn: Any, tenant_id: Any, requester: Any, at: Any,
                    **_: Any) -> tuple[Any, list[Any]]:
    return requester, []


if __name__ == "__main__":
    tickets.resolve_requester = _as_given  # type: ignore[assignment]
    from api.cli.main import main

    sys.exit(main(sys.argv[1:]))
