"""Answers to reads that tolerate lag: read where ``Services.reads`` chose, and saying
where.

Routes read through ``services.reads.run(read)`` (eventstore/replica.py ``Reads``):
the replica while it is fit, else the primary, and the primary again if the replica
fails the read. Every such answer carries ``Read-From`` (``primary`` or ``replica``)
and ``Read-Lag-Seconds`` (the replica's delay behind the primary when it was read; 0
on the primary); answers with a freshness block say the same in their body.
"""

from __future__ import annotations

from api.http.answer_headers import READ_FROM, READ_LAG
from eventstore.replica import Source


def source_headers(source: Source) -> dict[str, str]:
    """The headers that say where an answer was read (declared by a route with
    ``sends(200, required=(READ_FROM, READ_LAG))``)."""
    return {READ_FROM.name: source.name, READ_LAG.name: f"{source.lag_seconds:.3f}"}
