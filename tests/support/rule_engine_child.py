"""The rule engine in its own OS process that stops dead inside its Nth batch.

``python -m tests.support.rule_engine_child DSN N BATCH_SIZE``: batches 1..N-1 commit;
in batch N, after the rules' actions are appended and the checkpoint moved but before
the commit, it prints ``IN_BATCH <from> <to>`` and hangs until killed.
"""

from __future__ import annotations

import asyncio
import sys

from eventstore.keys import Keyring
from eventstore.pool import create_pool
from handlers.rule_engine import RuleEngine
from projections.projector import Batch, Projector


async def main(dsn: str, stop_at: int, batch_size: int) -> None:
    pool = await create_pool(dsn, min_size=1, max_size=2)
    secret = await pool.fetchval("SELECT value FROM instance_secrets WHERE name = 'data_key'")
    seen = 0

    async def hook(batch: Batch) -> None:
        nonlocal seen
        seen += 1
        if seen == stop_at:
            print(f"IN_BATCH {batch.from_seq} {batch.to_seq}", flush=True)
            await asyncio.Event().wait()

    projector = Projector(pool, [RuleEngine(Keyring(bytes(secret)))], batch_size=batch_size,
                          before_commit=hook)
    await projector.ensure_checkpoints()
    await projector.drain()
    print("DRAINED", flush=True)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3])))
