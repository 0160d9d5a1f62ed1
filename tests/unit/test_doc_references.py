"""Docs that cannot drift: every repository path and every dotted reference to our own
modules that the docs, the README and our Python files' docstrings and comments name
must exist.

A path (``api/http/routing.py``, ``tests/e2e/``, ``docs/api.md``, a relative link in a
doc) must be a file or folder of the tree; a module reference (``api.http.access``,
``api.root.running``, ``domain.sla.SlaClock.due_at``) must name a module, then a name
that module defines, then a member of that class. A file moved or renamed without its
mentions fails here, naming each mention.

Not references: URLs, paths that only start like ours (``https://x/api/...``,
``/v1/...``, ``.helpdesk/``), patterns and placeholders (``tests/e2e/test_*.py``,
``docs/<name>.md``), outputs that git ignores (``bench/results.jsonl``), and
``client.<attribute>`` where ``client`` is a variable in an example (a ``client.``
reference counts when what follows is a module of the client package, or when it has
three parts or more).
"""

from __future__ import annotations

import ast
import fnmatch
import io
import re
import tokenize
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("domain", "eventstore", "projections", "handlers", "scheduler", "api",
            "migrations", "client", "bench", "tests")
FOLDERS = (*PACKAGES, "docs", "scripts")

# Drifts in files that are being rewritten elsewhere right now: listed here, with
# where they are, so that whoever merges that work removes the entry (a stale entry
# fails the test as well). Keep it empty otherwise.
KNOWN_DRIFTS: frozenset[tuple[str, str]] = frozenset()

# A path: one of our folders (after "./" too), then path characters. Globs and
# placeholders are read whole (and then left out), not cut short at the ``*`` or ``<``.
_PATH = re.compile(rf"(?:(?<=[\s(`'\"]\./)|(?<=^\./)|(?<![\w./\-~$@:]))"
                   rf"((?:{'|'.join(FOLDERS)})/[\w.\-/*{{}}<>]*)", re.M)
_MODULE = re.compile(rf"(?<![\w./\-~$@:])((?:{'|'.join(PACKAGES)})(?:\.\w+)+)(?![\w/-])")
# A markdown link's target: [text](target) or [text]: target.
_LINK = re.compile(r"\]\(([^)\s]+)\)|^\s*\[[^\]]+\]:\s*(\S+)", re.M)
_FILE_ENDINGS = (".md", ".py", ".sql", ".json", ".jsonl", ".txt", ".toml", ".yml", ".yaml",
                 ".html", ".js", ".css", ".png", ".svg", ".sh", ".cfg", ".ini", ".lua")


@dataclass(frozen=True, slots=True)
class Mention:
    where: str  # file:line
    text: str


@cache
def doc_texts() -> tuple[tuple[Path, int, str], ...]:
    """(file, first line, text) of every text the rule covers."""
    texts = [(doc, 1, doc.read_text())
             for doc in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]]
    for package in PACKAGES:
        for source in sorted((ROOT / package).rglob("*.py")):
            texts.extend(python_texts(source))
    return tuple(texts)


def python_texts(source: Path) -> Iterator[tuple[Path, int, str]]:
    """A Python file's docstrings (every string that is a statement of its own:
    module, class, function and attribute docstrings) and comments."""
    text = source.read_text()
    tokens = [t for t in tokenize.generate_tokens(io.StringIO(text).readline)
              if t.type not in (tokenize.NL, tokenize.INDENT, tokenize.DEDENT)]
    starts = (tokenize.NEWLINE, tokenize.ENCODING)
    for i, token in enumerate(tokens):
        if token.type == tokenize.COMMENT:
            yield source, token.start[0], token.string
        elif (token.type == tokenize.STRING and (i == 0 or tokens[i - 1].type in starts)
              and i + 1 < len(tokens) and tokens[i + 1].type in (tokenize.NEWLINE,
                                                                 tokenize.ENDMARKER)):
            value = ast.literal_eval(token.string)
            if isinstance(value, str):
                yield source, token.start[0], value


@cache
def _ignored() -> tuple[str, ...]:
    lines = (ROOT / ".gitignore").read_text().splitlines()
    return tuple(line.strip() for line in lines if line.strip() and not line.startswith("#"))


def _git_ignored(path: str) -> bool:
    for pattern in _ignored():
        anchored = pattern.rstrip("/")
        if "/" in anchored and fnmatch.fnmatch(path, anchored):
            return True
        if "/" not in anchored and any(fnmatch.fnmatch(part, anchored)
                                       for part in path.split("/")):
            return True
    return False


def path_drifts(text: str, here: Path) -> Iterator[str]:
    """The paths ``text`` names that do not exist (``here``: the file it is in, for
    relative links)."""
    for match in _PATH.finditer(text):
        path = match.group(1).rstrip(".-")
        if any(c in path for c in "*{}<>") or _git_ignored(path):
            continue
        if not (ROOT / path).exists():
            yield path
    if here.suffix == ".md":
        for match in _LINK.finditer(text):
            target = (match.group(1) or match.group(2)).split("#")[0]
            if not target or re.match(r"^[a-z][a-z0-9+.-]*:", target) or target.startswith("/"):
                continue  # a URL, an anchor in the same page, or a path of the API
            if not (here.parent / target).exists():
                yield target


def _module_file(parts: list[str]) -> Path | None:
    base = ROOT.joinpath(*parts)
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def _targets(target: ast.expr) -> Iterator[str]:
    if isinstance(target, ast.Name):
        yield target.id
    elif isinstance(target, ast.Tuple | ast.List):
        for element in target.elts:
            yield from _targets(element)


def _defined(node: ast.stmt) -> Iterator[tuple[str, frozenset[str] | None]]:
    """The names a statement defines, with a class's members."""
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
        yield node.name, None
    elif isinstance(node, ast.ClassDef):
        yield node.name, frozenset(n for member in node.body for n, _ in _defined(member))
    elif isinstance(node, ast.Assign):
        for target in node.targets:
            for name in _targets(target):
                yield name, None
    elif isinstance(node, ast.AnnAssign | ast.AugAssign):
        for name in _targets(node.target):
            yield name, None
    elif isinstance(node, ast.Import | ast.ImportFrom):
        for alias in node.names:
            yield (alias.asname or alias.name).split(".")[0], None
    elif isinstance(node, ast.If | ast.Try | ast.With):
        handlers = [s for h in getattr(node, "handlers", []) for s in h.body]
        for child in [*node.body, *getattr(node, "orelse", []), *handlers,
                      *getattr(node, "finalbody", [])]:
            yield from _defined(child)


@cache
def _names(module: Path) -> dict[str, frozenset[str] | None]:
    tree = ast.parse(module.read_text())
    return {name: members for node in tree.body for name, members in _defined(node)}


def module_drift(reference: str) -> str | None:
    """Why ``reference`` names nothing, or None when it names a module, a name in it,
    or a member of a class in it."""
    parts = reference.split(".")
    if parts[-1].endswith(tuple(e.lstrip(".") for e in _FILE_ENDINGS)) and \
            f".{parts[-1]}" in _FILE_ENDINGS:
        return None  # a file's name (api.md, client.py), not a module
    for cut in range(len(parts), 0, -1):
        module = _module_file(parts[:cut])
        if module is not None:
            break
    else:
        return "no such module"
    rest = parts[cut:]
    if not rest:
        return None
    if parts[0] == "client" and cut == 1 and len(parts) == 2:
        return None  # ``client.close()``: the variable of an example, not the package
    names = _names(module)
    owner = ".".join(parts[:cut])
    if rest[0] not in names:
        return f"{owner} defines no {rest[0]}"
    members = names[rest[0]]
    if len(rest) > 1 and members is not None and rest[1] not in members:
        return f"{owner}.{rest[0]} has no {rest[1]}"
    return None


@cache
def drifts() -> tuple[tuple[str, str, str], ...]:
    """(file:line, reference, why) for every mention that names nothing."""
    found = []
    for source, first, text in doc_texts():
        name = source.relative_to(ROOT).as_posix()
        for offset, line in enumerate(text.splitlines()):
            where = f"{name}:{first + offset}"
            for path in path_drifts(line, source):
                found.append((where, path, "no such file or folder"))
            for match in _MODULE.finditer(line):
                why = module_drift(match.group(1).rstrip("."))
                if why is not None:
                    found.append((where, match.group(1), why))
    return tuple(found)


def test_every_path_and_module_the_docs_name_exists():
    found = drifts()
    unexpected = [d for d in found if (d[0].split(":")[0], d[1]) not in KNOWN_DRIFTS]
    assert unexpected == [], "\n".join(f"{w}: {ref} ({why})" for w, ref, why in unexpected)
    stale = KNOWN_DRIFTS - {(where.split(":")[0], ref) for where, ref, _ in found}
    assert not stale, f"fixed, so remove from KNOWN_DRIFTS: {sorted(stale)}"


def test_the_rule_reads_the_mentions_it_is_for():
    # A scan that read nothing would pass; these are the mentions it must have seen.
    texts = {(s.relative_to(ROOT).as_posix(), t) for s, _, t in doc_texts()}
    seen = "\n".join(t for _, t in texts)
    assert "api/http/access.py" in seen  # README.md, docs/api.md
    assert "``api.root.load_cursor_codec``" in seen  # a docstring
    assert any(f == "api/root.py" and t.startswith("# Tests add job kinds") for f, t in texts)
    paths = sum(len(_PATH.findall(t)) for _, t in texts)
    modules = sum(len(_MODULE.findall(t)) for _, t in texts)
    assert paths > 200 and modules > 100, (paths, modules)


@pytest.mark.parametrize(("text", "expected"), [
    ("see api/http/routing.py and tests/e2e/test_tickets_http.py::test_x.", []),
    ("the folders api/http/ and docs/.", []),
    ("run ./scripts/serve, then ./scripts/srve", ["scripts/srve"]),
    ("../api/x.py and x/./api/y.py are not from the root", []),
    ("moved: api/http/nowhere.py, then docs/gone.md.", ["api/http/nowhere.py",
                                                         "docs/gone.md"]),
    ("a typo in tests/e2e/test_tikets_http.py:12", ["tests/e2e/test_tikets_http.py"]),
    ("https://example.com/api/http/nowhere.py and /v1/tickets/{id}", []),
    ("~/api/x, $HOME/tests/y, git@host:api/z", []),
    ("writes f.jsonl into .helpdesk/ and DATA_DIR/pg", []),
    ("every tests/e2e/test_*.py and docs/<name>.md", []),
    ("appends to bench/results.jsonl", []),
])
def test_paths_are_told_from_urls_examples_and_patterns(text: str, expected: list[str]):
    assert list(path_drifts(text, ROOT / "api" / "x.py")) == expected


def test_relative_links_in_docs_are_resolved_from_the_doc():
    here = ROOT / "docs" / "api.md"
    assert list(path_drifts("[settings](settings.md#widget_origins)", here)) == []
    assert list(path_drifts("[readme](../README.md)", here)) == []
    assert list(path_drifts("[x](setings.md) [y](#anchor) [z](https://a.example/b.md)",
                            here)) == ["setings.md"]


@pytest.mark.parametrize(("reference", "why"), [
    ("api.http.access", None),
    ("api.http.access.roles_for", None),
    ("api.root.Services.store", None),
    ("domain.sla.SlaClock", None),
    ("domain.ticket.Ticket", None),  # a name the package imports
    ("tests.support.pg.TestDatabase", None),
    ("api.md", None),
    ("client.close", None),
    ("client.stream.StreamClient", None),
    ("api.redis_guard", "api defines no redis_guard"),
    ("api.http.sealed", "api.http defines no sealed"),
    ("domain.sla.Clock", "domain.sla defines no Clock"),
    ("api.root.Services.nothing", "api.root.Services has no nothing"),
    ("client.stream.Nothing", "client.stream defines no Nothing"),
])
def test_module_references_resolve_to_modules_names_and_members(reference: str,
                                                                 why: str | None):
    assert module_drift(reference) == why
