"""The seams point one way: every import of crashlab's own goes down the layers table of docs/architecture.md,
and none goes around a circle. The imports are read from the source with `ast`: no code runs."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

from crashlab.engine.sweep import sweep_all
from crashlab.loops import VARIANTS
from crashlab.protocols.death import Choice, Left
from crashlab.protocols.runner import Runner
from crashlab.protocols.scenario import ScenarioRun, Setup
from crashlab.protocols.variant import RunnerKind
from crashlab.runners import RunnerSpec

from .conftest import ROOT

ARCHITECTURE = ROOT / "docs" / "architecture.md"
#: A row whose last column says this may import anything.
ANYTHING = "every folder"


@dataclass(frozen=True)
class Import:
    """One module of the package importing another of it, at a line; `typing`: under ``if TYPE_CHECKING:``."""

    source: str
    target: str
    line: int
    typing: bool

    def __str__(self) -> str:
        return f"{self.source} imports {self.target} (line {self.line}{', for typing' if self.typing else ''})"


def modules(package: Path) -> dict[str, Path]:
    """Every module of `package` by its dotted name (a package by its own name, not ``__init__``)."""
    found = {}
    for path in package.rglob("*.py"):
        parts = list(path.relative_to(package.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def imports(package: Path) -> list[Import]:
    """Every import from one module of `package` of another, lazy ones inside functions included."""
    known = modules(package)
    found = []
    for name, path in known.items():
        tree = ast.parse(path.read_text(), str(path))
        typing = {id(node) for guard in ast.walk(tree) if isinstance(guard, ast.If) and
                  "TYPE_CHECKING" in ast.unparse(guard.test) for node in ast.walk(guard)}
        for node in ast.walk(tree):
            for named in _targets(node, name, path.name == "__init__.py", known):
                target = named
                while target and target not in known:  # `import crashlab.x.name`: the module x
                    target = target.rpartition(".")[0]
                if target and target != name:
                    found.append(Import(name, target, node.lineno, id(node) in typing))
    return list(dict.fromkeys(found))


def _targets(node: ast.AST, module: str, is_package: bool, known: dict[str, Path]) -> Iterator[str]:
    """What an import statement imports: `from a import b` imports the module a.b where there is one, else a."""
    if isinstance(node, ast.Import):
        yield from (alias.name for alias in node.names)
    elif isinstance(node, ast.ImportFrom):
        base = node.module or ""
        if node.level:
            here = module.split(".")[: len(module.split(".")) - (node.level - int(is_package))]
            base = ".".join([*here, *([node.module] if node.module else [])])
        yield from (f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base for alias in node.names)


def row_of(module: str) -> str:
    """The layers table's row a module belongs to: its folder, or its own name at the top of the package."""
    parts = module.split(".")[1:]
    if not parts:
        return "crashlab"
    if parts[0] == "protocols" and (len(parts) == 1 or parts[1] in ("points", "schedule")):
        return "protocols.points"
    return "cli" if parts[0] == "__main__" else parts[0]


def rules(text: str) -> dict[str, frozenset[str] | None]:
    """The table after the ``layers`` marker: each row's folder and what it may import (None: anything)."""
    table = text.split("<!-- layers:", 1)[1].split("\n\n", 1)[0]
    found: dict[str, frozenset[str] | None] = {}
    for line in table.splitlines()[3:]:
        folder, _, allowed = (cell.strip() for cell in line.strip().strip("|").split("|"))
        names = frozenset(re.findall(r"`([^`]+)`", allowed))
        found[folder.strip("`")] = None if allowed == ANYTHING else names
    return found


def forbidden(found: list[Import], allowed: dict[str, frozenset[str] | None]) -> list[str]:
    """Each import that goes where its row does not allow, or from a module no row holds."""
    wrong = []
    for edge in found:
        mine, theirs = row_of(edge.source), row_of(edge.target)
        if mine not in allowed:
            wrong.append(f"{edge}: {mine} has no row in the layers table")
        elif mine != theirs and (may := allowed[mine]) is not None and theirs not in may:
            wrong.append(f"{edge}: {mine} may import only {', '.join(sorted(may)) or 'nothing of crashlab'}")
    return wrong


def circles(found: list[Import]) -> list[list[str]]:
    """The modules that import one another around a circle, by the imports that run (Tarjan's components)."""
    graph: dict[str, set[str]] = {}
    for edge in found:
        if not edge.typing:
            graph.setdefault(edge.source, set()).add(edge.target)
            graph.setdefault(edge.target, set())
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    components = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for nxt in graph[node]:
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while (top := stack.pop()) != node:
                component.append(top)
            components.append(sorted([node, *component]))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return [c for c in components if len(c) > 1]


CRASHLAB = imports(ROOT / "crashlab")
ALLOWED = rules(ARCHITECTURE.read_text())


def test_every_import_of_crashlab_goes_down_the_layers_table():
    assert len(CRASHLAB) > 300 and len(ALLOWED) > 15, "the package's imports or the table were not found"
    assert forbidden(CRASHLAB, ALLOWED) == []


def test_no_module_imports_another_that_imports_it_back_around_a_circle():
    assert circles(CRASHLAB) == []


def test_the_engine_imports_neither_the_runners_nor_the_faults_nor_the_loops():
    engine = {row_of(e.target) for e in CRASHLAB if row_of(e.source) == "engine"}
    assert engine and not engine & {"runners", "faults", "loops", "runtimes"}


def test_the_world_and_the_store_import_the_crash_point_call_not_the_engine():
    below = {row_of(e.target) for e in CRASHLAB if row_of(e.source) in ("world", "durable")}
    assert "protocols.points" in below and "engine" not in below and "protocols" not in below


def test_the_checks_catch_an_upward_import_and_a_circle(tmp_path):
    """Not vacuous: a package whose engine imports a runner, and two modules that import each other."""
    package = tmp_path / "crashlab"
    (package / "engine").mkdir(parents=True)
    (package / "runners").mkdir()
    (package / "__init__.py").write_text("")
    (package / "engine" / "__init__.py").write_text("")
    (package / "runners" / "__init__.py").write_text("")
    (package / "engine" / "sweep.py").write_text("from crashlab.runners.forked import Forked\n")
    (package / "runners" / "forked.py").write_text("from . import served\n")
    (package / "runners" / "served.py").write_text("def f():\n    from crashlab.runners.forked import Forked\n")
    found = imports(package)
    assert forbidden(found, {"engine": frozenset({"protocols"}), "runners": None, "crashlab": None}) == [
        "crashlab.engine.sweep imports crashlab.runners.forked (line 1): engine may import only protocols"]
    assert circles(found) == [["crashlab.runners.forked", "crashlab.runners.served"]]


class Counting:
    """A runner of this test's own, handed to the engine as any runner is: it lives each life through the
    in-process runner, and counts them. The engine asks nothing of it but the runner protocol."""

    kind: RunnerKind = "in-process"

    def __init__(self, inner: Runner):
        self.inner = inner
        self.lives = 0

    def scenario(self, setup: Setup, crashes: tuple[int, ...], choices: tuple[Choice, ...] = (),
                 watch: bool = False) -> ScenarioRun:
        self.lives += len(crashes) + 1
        return self.inner.scenario(setup, crashes, choices, watch)

    def life(self, setup: Setup, start: Left | None, crashes: tuple[int, ...], choices: tuple[Choice, ...],
             watch: bool) -> ScenarioRun:
        self.lives += 1
        return self.inner.life(setup, start, crashes, choices, watch)


@dataclass
class CountingRunners:
    """What opens the counting runner: the engine's `Runners`, defined outside crashlab."""

    opened: list[Counting]
    kind: RunnerKind = "in-process"

    def check(self, setup: Setup) -> None:
        RunnerSpec().check(setup)

    def shares(self, setup: Setup) -> bool:
        return True

    @contextmanager
    def open(self) -> Iterator[Counting]:
        with RunnerSpec().open() as inner:
            self.opened.append(Counting(inner))
            yield self.opened[-1]


@pytest.mark.parametrize("slug", ["after-reply", "keys-markers"])
def test_a_runner_defined_outside_crashlab_sweeps_the_book_as_crashlab_own_does(triage, slug):
    setup = Setup(VARIANTS[slug], triage)
    opened: list[Counting] = []
    theirs = sweep_all([setup], CountingRunners(opened))[0].row()
    assert theirs == sweep_all([setup], RunnerSpec())[0].row()
    # Every restart by their runner: the uninterrupted run twice, and each distinct state once (`distinct` counts a
    # state at each depth it is met, the memo runs it once).
    assert len(opened) == 1 and 0 < opened[0].lives - 2 <= theirs.distinct
