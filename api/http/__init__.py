"""HTTP plumbing every route shares: problems, strict routing, parameters, cursors,
idempotency, authentication and the dependency aliases."""
