"""Handlers take one kind of first argument: the unit of work (docs/architecture.md,
"Handlers take a unit of work").

Every public coroutine function of ``handlers`` takes as its first argument one of:

- ``UnitOfWork``: the rule. Its caller opened it, so one request is one transaction.
- a connection: a step that a handler runs on the connection of the unit of work it
  holds (it can then neither append, stage nor take a data key). The API, the command
  line and the scheduler never call one, except those that cannot have a unit of work
  (``CONNECTION_ONLY``, each with why).
- ``JobContext``: a scheduler job, handed by the claim loop the store, the pool, the
  clock and the stop signal for a claimed job. It is a different thing from a command
  handler: it outlives any one transaction (it retries, waits on another system, or
  moves many tickets one unit of work each), so it opens its own units of work.
- ``Run``: one step of a Zendesk import run, which carries the store, the source and the
  checkpoint, and commits as it goes (thousands of commands, each its own unit of work).
- ``EventStore``: only where one unit of work cannot be given (``OWN_TRANSACTIONS``,
  each with why: several transactions, or a tenant learnt on the way).
- anything else only in ``OTHER_FIRST``, each with why (an operator's database URL, the
  other side of a protocol, a file's bytes).

A new handler that takes something else, or a new entry point from the edges that
takes a connection, fails here and names itself.
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
}

_TOKEN = ("the tenant is the token's: a read-only check first, the password hash outside "
          "any transaction, then the change as the person the check found")
_NAMED = "the tenant is named by slug or id and looked up first"
_FILES = "no transaction waits on a client's or a storage's bytes"
_TAKEN_IN = ("one mail or event a unit of work; one refused is quarantined or settled in a "
             "transaction of its own after the one that tried it rolled back")
_PER_TICKET = "one short transaction per ticket it moves, so one conflict undoes no other"
_OPERATOR = "the owner role, by database URL, outside the runtime role's pool"

OWN_TRANSACTIONS: dict[str, str] = {
    "handlers.attachments.check_upload": _FILES,
    "handlers.attachments.receive": _FILES,
    "handlers.attachments.receive_all": _FILES,
    "handlers.attachments.discard": _FILES,
    "handlers.attachments.open_file": _FILES,
    "handlers.attachments.verify_files": _FILES,
    "handlers.brand.brand_of": _NAMED,
    "handlers.oidc.button": _NAMED,
    "handlers.oidc.start": _NAMED + "; the provider is called outside any transaction",
    "handlers.oidc.finish": _NAMED + "; the provider is called outside any transaction",
    "handlers.delivery.attempt": "the other system is called outside any transaction, and "
                                 "its row settled after",
    "handlers.invitations.accept": _TOKEN,
    "handlers.portal.set_password": _TOKEN,
    "handlers.portal.spendable_link": _TOKEN,
    "handlers.satisfaction.rate_by_link": _TOKEN,
    "handlers.sessions.sign_in": _TOKEN,
    "handlers.sessions.refresh": _TOKEN,
    "handlers.sessions.sign_out": _TOKEN,
    "handlers.sign_in_throttle.check": "counts kept by account and address, outside any "
                                       "tenant",
    "handlers.sign_in_throttle.failed": "a failure's count commits on its own, outside any "
                                        "tenant",
    "handlers.sign_in_throttle.succeeded": "counts kept by account and address, outside any "
                                           "tenant",
    "handlers.mail_in.take_in": _TAKEN_IN,
    "handlers.mail_in.take_in_all": _TAKEN_IN,
    "handlers.mail_in.retry_quarantined": _TAKEN_IN,
    "handlers.mail_poll.poll_mailbox": _TAKEN_IN + "; the IMAP server outside any "
                                                   "transaction",
    "handlers.slack_in.take_event": _TAKEN_IN,
    "handlers.sla_warnings.warn_tenant": _PER_TICKET,
    "handlers.sweep.sweep_tenant": _PER_TICKET,
    "handlers.widget.open_session": "the unit of work acts as the session it creates",
    "handlers.demo.files.attach_demo_files": "the demo seed: files, then a command each",
    "handlers.zendesk_import.import_zendesk": "thousands of commands, committed as they go",
}
"""Handlers that take the ``EventStore`` and open their own units of work, with why."""

OTHER_FIRST: dict[str, str] = {
    "handlers.demo.seed.seed_demo": _OPERATOR,
    "handlers.demo.seed.seed_plan": _OPERATOR,
    "handlers.tenants.operator_unit_of_work": _OPERATOR + ": it opens the unit of work",
    "handlers.tenants.create_tenant_as_operator": _OPERATOR,
    "handlers.tenants.set_slug": _OPERATOR,
    "handlers.upgrades.upgrade": _OPERATOR + ", across every tenant",
    "handlers.tenant_move.rebuild_projections": "the owner role's pool: a rebuild commits a "
                                                "batch at a time",
    "handlers.slack_out.post_message": "Slack's Web API, no database",
    "handlers.slack_out.find_post": "Slack's Web API, no database",
    "handlers.mail_idle.watch_mailbox": "an IMAP IDLE, outside any transaction",
    "handlers.mail_out.send_mail": "an SMTP exchange, outside any transaction",
    "handlers.attachments.read_range": _FILES + " (the file was opened in a unit of work)",
    "handlers.attachments.forget_blobs": _FILES + " (after the erasure committed)",
}
"""Handlers whose first argument is none of the kinds above, with why."""

KINDS = ("UnitOfWork", "asyncpg.Connection", "Connection", "JobContext", "Run")


def _first(node: ast.AsyncFunctionDef | ast.FunctionDef) -> str:
    args = node.args.posonlyargs + node.args.args
    if not args or args[0].annotation is None:
        return ""
    return ast.unparse(args[0].annotation)


@cache
def first_arguments() -> dict[str, tuple[str, bool]]:
    """Every public module-level function of handlers by its dotted name
    (``handlers.mailboxes.inbound_tenant``): its first argument's annotation, and
    whether it is a coroutine function."""
    found = {}
    for path in sorted((ROOT / "handlers").rglob("*.py")):
        module = ".".join(path.relative_to(ROOT).with_suffix("").parts)
        for node in ast.parse(path.read_text()).body:
            if (isinstance(node, ast.AsyncFunctionDef | ast.FunctionDef)
                    and not node.name.startswith("_")):
                found[f"{module}.{node.name}"] = (_first(node),
                                                  isinstance(node, ast.AsyncFunctionDef))
    return found


def connection_takers() -> frozenset[str]:
    """The public functions of handlers whose first argument is a connection."""
    return frozenset(name for name, (first, _) in first_arguments().items()
                     if first in ("asyncpg.Connection", "Connection"))


def handlers_by_first() -> dict[str, str]:
    """The public coroutine functions of handlers: the handlers, by their first
    argument's annotation."""
    return {name: first for name, (first, is_async) in first_arguments().items() if is_async}


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
    assert "handlers.zendesk_import.import_zendesk" in calls  # from handlers.zendesk_import import
    assert "handlers.mailboxes.get_mailbox" in calls


def test_every_handler_takes_a_unit_of_work_or_says_why():
    wrong = []
    for name, first in sorted(handlers_by_first().items()):
        if first in KINDS:
            continue
        if first == "EventStore" and name in OWN_TRANSACTIONS:
            continue
        if first != "EventStore" and name in OTHER_FIRST:
            continue
        wrong.append(f"{name} takes {first or 'nothing typed'} first")
    assert not wrong, ("give these the unit of work (or say why not, in OWN_TRANSACTIONS "
                       "for an EventStore, else in OTHER_FIRST):\n" + "\n".join(wrong))


def test_every_exception_still_names_a_handler_that_takes_what_it_says():
    # A stale entry would let a later handler of the same name through.
    firsts = handlers_by_first()
    assert {n for n in OWN_TRANSACTIONS if firsts.get(n) != "EventStore"} == set()
    assert {n for n in OTHER_FIRST if firsts.get(n, "EventStore") in (*KINDS, "EventStore")
            } == set()


def test_most_handlers_take_the_unit_of_work():
    # The rule, not the exception: the exceptions stay a small part of the handlers.
    firsts = list(handlers_by_first().values())
    assert firsts.count("UnitOfWork") > 2 * (firsts.count("EventStore") + len(OTHER_FIRST))
