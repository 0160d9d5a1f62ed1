"""An import-linter contract: no import circle among the modules of some packages.

import-linter's own ``acyclic_siblings`` squashes each package's children and so also
refuses two packages that merely use each other (``api.http`` using ``api.root`` for
the ``Services`` type, ``api.root`` building parts from ``api.http``), which is how a
composition root is built. This contract looks at modules: it fails on a module that
imports, directly or through others of the named packages, a module that imports it
back. Imports under ``TYPE_CHECKING`` count, as they do for the graph import-linter
builds: a circle that only the type checker walks is still a circle to a reader.

pyproject.toml registers it (``contract_types``); lint-imports finds this module
because it puts the working directory on the path.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable

import grimp
from importlinter.application import output
from importlinter.domain import fields
from importlinter.domain.contract import Contract, ContractCheck


def circles(graph: grimp.ImportGraph, packages: Iterable[str]) -> list[list[str]]:
    """One circle per knot of mutually importing modules (a strongly connected set of
    two or more), each as ``[a, b, ..., a]``, shortest through its first module."""
    modules: set[str] = set()
    for package in packages:
        modules |= {package, *graph.find_descendants(package)}
    edges = {m: sorted(graph.find_modules_directly_imported_by(m) & modules)
             for m in sorted(modules)}
    return [_circle_through(knot[0], set(knot), edges) for knot in _knots(edges)]


def _knots(edges: dict[str, list[str]]) -> list[list[str]]:
    """Tarjan's strongly connected components of two or more, without recursion."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    knots: list[list[str]] = []
    for root in edges:
        if root in index:
            continue
        work = [(root, iter(edges[root]))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(edges[child])))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                knot = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    knot.append(member)
                    if member == node:
                        break
                if len(knot) > 1:
                    knots.append(sorted(knot))
    return sorted(knots)


def _circle_through(start: str, knot: set[str], edges: dict[str, list[str]]) -> list[str]:
    """The shortest way from ``start`` back to itself inside ``knot`` (breadth first)."""
    came_from: dict[str, str] = {}
    queue = deque([start])
    while queue:
        node = queue.popleft()
        for child in edges[node]:
            if child not in knot:
                continue
            if child == start:
                path = [node]
                while path[-1] != start:
                    path.append(came_from[path[-1]])
                return [*reversed(path), start]
            if child not in came_from:
                came_from[child] = node
                queue.append(child)
    raise AssertionError(f"{start} is in a knot but on no circle")


class AcyclicModulesContract(Contract):
    """``containers``: the packages whose modules may not import each other in a circle."""

    type_name = "acyclic_modules"

    containers = fields.ListField(subfield=fields.StringField())

    def check(self, graph: grimp.ImportGraph, verbose: bool) -> ContractCheck:
        found = circles(graph, self.containers)  # type: ignore[arg-type]
        return ContractCheck(kept=not found, metadata={"circles": found})

    def render_broken_contract(self, check: ContractCheck) -> None:
        for circle in check.metadata["circles"]:
            output.print_error("Modules that import each other in a circle:")
            output.print_error("    " + " -> ".join(circle), bold=False)
            output.new_line()
