"""What the edges call in ``handlers`` takes a unit of work (docs/architecture.md,
"Handlers take a unit of work").

A function of ``handlers`` whose first argument is a connection is a step that a
handler runs on the connection of the unit of work it holds; the API, the command line
and the scheduler never call one, except those that cannot have a unit of work
(``CONNECTION_ONLY``, each with why). A new entry point that takes a connection fails
here, naming where it is called.
"""

from __future__ import annotations

import ast
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

CONNECTION_ONLY: dict[str, str] = {
    "handlers.mailboxes.inbound_tenant": "before a tenant is known: finds it for a mailbox",
    "handlers.slack.inbound_secret": "before a tenant is known: finds it for a Slack request",
    "handlers.tenants.resolve_tenant": "before a tenant is known: finds it by id or slug",
    "handlers.mailboxes.mail_health": "across every tenant, for readiness",
    "handlers.slack.slack_health": "across every tenant, for readiness",
    "handlers.tenant_move.arm_owner": "the owner role, outside row-level security",
    "handlers.tenant_move.set_read_only": "the owner role, outside row-level security",
    "handlers.tenant_move.header": "the owner role, outside row-level security",
    "handlers.tenant_move.write_state": "the owner role, outside row-level security",
    "handlers.tenant_move.head_of": "the owner role, outside row-level security",
    "handlers.tenant_move.import_tenant": "the owner role, outside row-level security",
    "handlers.ticket_state.load_ticket": "the write side's ticket state, read as a read "
                                         "model is, in a read-only unit of work",
}


def _first_is_connection(node: ast.AsyncFunctionDef | ast.FunctionDef) -> bool:
    args = node.args.posonlyargs + node.args.args
    return bool(args) and args[0].annotation is not None and \
        ast.unparse(args[0].annotation) in ("asyncpg.Connection", "Connection")


@cache
def connection_takers() -> frozenset[str]:
    """Every public module-level function of handlers whose first argument is a
    connection, by its dotted name (``handlers.mailboxes.inbound_tenant``)."""
    found = set()
    for path in sorted((ROOT / "handlers").rglob("*.py")):
        module = ".".join(path.relative_to(ROOT).with_suffix("").parts)
        for node in ast.parse(path.read_text()).body:
            if (isinstance(node, ast.AsyncFunctionDef | ast.FunctionDef)
                    and not node.name.startswith("_") and _first_is_connection(node)):
                found.add(f"{module}.{node.name}")
    return frozenset(found)


def _calls_from_edges() -> list[tuple[str, str]]:
    """(where, dotted name) for each call the API, the CLI and the scheduler make of a
    function of handlers, imported by name from its module or through its module."""
    calls = []
    for folder in ("api", "scheduler"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            tree = ast.parse(path.read_text())
            names: dict[str, str] = {}
            modules: dict[str, str] = {}
            for node in ast.walk(tree):
                if isinstance(node, ast.ImportFrom) and node.module:
                    for alias in node.names:
                        local = alias.asname or alias.name
                        if node.module == "handlers":
                            modules[local] = f"handlers.{alias.name}"
                        elif node.module.startswith("handlers."):
                            names[local] = f"{node.module}.{alias.name}"
            for node in ast.walk(tree):
                if not isinstance(node, ast.Call):
                    continue
                func, target = node.func, None
                if isinstance(func, ast.Name) and func.id in names:
                    target = names[func.id]
                elif (isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name)
                      and func.value.id in modules):
                    target = f"{modules[func.value.id]}.{func.attr}"
                if target is not None:
                    calls.append((f"{path.relative_to(ROOT)}:{node.lineno}", target))
    return calls


def test_the_edges_call_no_handler_with_a_connection_but_those_that_cannot_have_a_unit_of_work():
    takers = connection_takers()
    wrong = sorted(f"{where} calls {target}" for where, target in _calls_from_edges()
                   if target in takers and target not in CONNECTION_ONLY)
    assert not wrong, ("these take a connection and are called from the edges: give them "
                       "the unit of work (or say in CONNECTION_ONLY why they cannot have "
                       "one):\n" + "\n".join(wrong))


def test_every_exception_still_takes_a_connection():
    # A stale entry would let a later connection-taker of the same name through.
    assert set(CONNECTION_ONLY) <= connection_takers()


def test_the_check_sees_calls_of_both_import_forms():
    calls = {target for _, target in _calls_from_edges()}
    assert "handlers.tenant_move.import_tenant" in calls  # from handlers import tenant_move
    assert "handlers.ticket_state.load_ticket" in calls  # from handlers.ticket_state import
    assert "handlers.mailboxes.get_mailbox" in calls
