"""What one readiness check says about one part of the process.

The parts themselves answer in this shape (``RedisGuard.check``), and so do the checks
of api/ops/health.py, which readiness runs over the whole process; it stands alone so
that a part can answer without knowing the process that holds it.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class CheckResult:
    status: str  # ok | degraded | lagging | dormant | disabled | stalled | unavailable
    critical_failure: bool = False
    detail: str | None = None


__all__ = ["CheckResult"]
