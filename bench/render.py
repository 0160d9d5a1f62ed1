"""Render the JSON lines the benches wrote into docs/performance.md.

The table and its heading are replaced; the sections after it (each starting with a
``## `` heading: analyses and measurements written by hand) are kept as they are.
"""

from __future__ import annotations

import json
import os
import platform
import sys
from datetime import UTC, datetime
from pathlib import Path


def main(results: str, out: str) -> None:
    rows = [json.loads(line) for line in Path(results).read_text().splitlines() if line]
    lines = [
        "# Performance",
        "",
        "Written by `bench/run`. Every figure is measured beside a baseline in the same",
        "run on the same machine and given as a ratio; absolute numbers vary with the",
        "machine, ratios much less.",
        "",
        f"Run: {datetime.now(UTC):%Y-%m-%d %H:%M} UTC, {platform.machine()}, "
        f"{os.cpu_count()} cores, Python {platform.python_version()}.",
        "",
        "| bench | figure | value | baseline | ratio | target |",
        "|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(f"| {r['bench']} | {r['figure']} | {r['value']} | {r['baseline']} | "
                     f"{r['ratio']} | {r.get('target', '')} |")
    path = Path(out)
    kept = ""
    if path.exists():
        text = path.read_text()
        at = text.find("\n## ")
        kept = text[at:] if at >= 0 else ""
    path.write_text("\n".join(lines) + "\n" + kept)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
