"""How the ``helpdesk`` line declares what it does: a command is one word, and most
commands take one of their actions (``helpdesk audit verify``); each action runs one
function, the ``func`` that ``main`` calls with the parsed arguments."""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence
from typing import Any, TypeAlias

Subcommands: TypeAlias = "argparse._SubParsersAction[argparse.ArgumentParser]"
"""Where commands (or a command's actions) are added."""


def command(sub: Subcommands, name: str, help: str, *, aliases: Sequence[str] = (),
            metavar: str = "ACTION") -> Subcommands:
    """``helpdesk NAME ACTION …``: the command, and the place for its actions (one of
    them must be named; the chosen one is ``NAME_command`` in the arguments)."""
    parser = sub.add_parser(name, aliases=list(aliases), help=help)
    actions: Subcommands = parser.add_subparsers(dest=f"{name}_command", required=True,
                                                 metavar=metavar)
    return actions


def action(sub: Subcommands, name: str, func: Callable[..., Any], *,
           help: str) -> argparse.ArgumentParser:
    """One command or action that runs ``func``; its arguments are added to what this
    returns."""
    parser: argparse.ArgumentParser = sub.add_parser(name, help=help)
    parser.set_defaults(func=func)
    return parser
