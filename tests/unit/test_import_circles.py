"""The module-level circle check that pyproject.toml's ``acyclic_modules`` contract runs."""

from __future__ import annotations

import grimp

from tests.support.acyclic import circles


def graph(*imports: tuple[str, str]) -> grimp.ImportGraph:
    g = grimp.ImportGraph()
    for importer, imported in imports:
        g.add_import(importer=importer, imported=imported)
    for module in {m for pair in imports for m in pair}:
        parent = module.rpartition(".")[0]
        while parent:
            g.add_module(parent)
            parent = parent.rpartition(".")[0]
    return g


def test_a_chain_that_comes_back_is_a_circle_named_module_by_module():
    g = graph(("app.root", "app.http.pages"), ("app.http.pages", "app.http.auth"),
              ("app.http.auth", "app.root"), ("app.http.auth", "app.http.headers"))
    assert circles(g, ["app"]) == [["app.http.auth", "app.root", "app.http.pages",
                                    "app.http.auth"]]


def test_packages_that_use_each_other_without_a_module_circle_pass():
    # app.http -> app.root and app.root -> app.http, but no module comes back to itself:
    # the composition root's shape, which a squashed (package) check would refuse.
    g = graph(("app.http.auth", "app.root"), ("app.root", "app.http.tokens"))
    assert circles(g, ["app"]) == []


def test_each_knot_is_reported_once_and_circles_outside_the_packages_are_not():
    g = graph(("app.cli.a", "app.cli.b"), ("app.cli.b", "app.cli.a"),
              ("app.x", "app.y"), ("app.y", "app.z"), ("app.z", "app.x"),
              ("other.p", "other.q"), ("other.q", "other.p"))
    assert circles(g, ["app"]) == [["app.cli.a", "app.cli.b", "app.cli.a"],
                                   ["app.x", "app.y", "app.z", "app.x"]]

