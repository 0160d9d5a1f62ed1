"""Command handlers: the write path of every aggregate and of tenant configuration.

Plain async functions that take a unit of work (``eventstore.store.UnitOfWork``, one
transaction armed for a tenant and an actor) and a command, apply the rules, update
the inline read models and record every change as an event. Routes, the operator
command line, job handlers and test fixtures all call them, so a change is recorded
the same way whoever makes it. Nothing here knows about HTTP: rules raise
``domain.errors`` (or ``handlers.errors``), which the API translates at its edge.
"""
