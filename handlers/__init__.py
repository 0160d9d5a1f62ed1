"""Command handlers: the write path of every aggregate and of tenant configuration.

Plain async functions that take a unit of work (``eventstore.store.UnitOfWork``, one
transaction armed for a tenant and an actor) and a command, apply the rules, update
the inline read models and record every change as an event. Routes, the operator
command line, job handlers and test fixtures all call them, so a change is recorded
the same way whoever makes it. Nothing here knows about HTTP: rules raise
``domain.errors`` (or ``handlers.errors``), which the API translates at its edge.

A function here that takes a connection rather than the unit of work is a step a
handler runs on its unit of work's connection (it can then neither append, stage nor
take a data key), or one of the few the edges call where no unit of work can be armed:
before a tenant is known, across tenants, or as the owner role (docs/architecture.md,
"Handlers take a unit of work"; tests/unit/test_handler_arguments.py).
"""
