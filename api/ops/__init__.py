"""Operational add-ons: Redis guard, rate limits, analytics cache, metrics, logs and
health checks. Each fails open or reports; none is load-bearing."""
