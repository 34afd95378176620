"""The agent runtimes crashlab sweeps, one package each: the seam a new runtime plugs into.

A runtime's package holds two modules. Its ``__init__`` names it (`Runtime`: its rows, its version,
the guarantee its documentation gives for an interrupted tool call) and imports nothing heavy, so
the registry, `crashlab --help` and `crashlab frameworks` can list every runtime without loading
one. Its ``loop`` module is the job written as that runtime's user writes it, with ``entry(slug,
run)``: the only module that imports the runtime, loaded when a process first runs it. (DBOS's
package has one more, ``launch``, which Pydantic AI's durable rows share.)

A runtime is found by being here: adding one is adding a package, and nothing else learns its name.

A runtime may also name its `Agent`: the agent of examples/agents/ written on it as its docs write one, which
`crashlab frameworks` sweeps from outside, as the program it is, beside the rows its adapter sweeps. An agent
written on an SDK with no runtime (the `openai` package's own tool loop, in Python and on Node) has rows under
that SDK (`SDKS`), which promises nothing about a tool call its program was interrupted in.
"""

from __future__ import annotations

import json
import pkgutil
import shlex
import shutil
import sys
from dataclasses import dataclass, field
from functools import cache
from importlib import import_module
from importlib.util import find_spec
from pathlib import Path

#: The agents of examples/agents/: in crashlab's repository, beside its package (a wheel holds none).
EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "agents"

#: What installs the Python SDKs the agents of examples/agents/ are written on.
EXAMPLES_EXTRA = "pip install 'crashlab[examples]'"


@dataclass(frozen=True)
class Agent:
    """An agent of examples/agents/, written as its SDK's docs write one: a program that imports nothing of
    crashlab's, swept from outside as `crashlab sweep --command` sweeps it, in its plain form and its keyed one
    (``--keyed``: a key of the run's ID and the model's tool-call ID)."""

    name: str  # its rows' prefix: NAME-plain, NAME-keyed
    script: str  # its path in examples/agents/
    #: What it imports beyond its runtime: top-level Python modules, or a Node agent's npm packages (in its folder)
    imports: tuple[str, ...] = ()

    @property
    def on_node(self) -> bool:
        return self.script.endswith(".mjs")

    @property
    def install(self) -> str:
        """The command that installs what it needs, from the top of crashlab's checkout."""
        return f"npm ci --prefix examples/agents/{Path(self.script).parent}" if self.on_node else EXAMPLES_EXTRA

    def rows(self) -> dict[str, str]:
        """Its rows, slug -> its command as its user runs it from the top of the checkout (the table's setting)."""
        command = f"{'node' if self.on_node else 'python'} examples/agents/{self.script}"
        return {f"{self.name}-plain": command, f"{self.name}-keyed": f"{command} --keyed"}

    def commands(self) -> tuple[str, str]:
        """Its rows as `crashlab sweep --command NAME=CMD` takes them: a Python agent run by this Python, whose
        packages are the ones installed here."""
        program = "node" if self.on_node else shlex.quote(sys.executable)
        script = shlex.quote(str(EXAMPLES / self.script))
        plain, keyed = self.rows()
        return f"{plain}={program} {script}", f"{keyed}={program} {script} --keyed"

    def missing(self) -> str | None:
        """Why it cannot run here, or None: not in this checkout, no Node, or a package it imports not installed."""
        if not (EXAMPLES / self.script).is_file():
            return f"no {EXAMPLES / self.script}: the agents of examples/agents/ are in crashlab's repository"
        if self.on_node and shutil.which("node") is None:
            return "no node on PATH"
        found = (lambda package: npm_version(self.script, package)) if self.on_node else find_spec
        absent = [module for module in self.imports if found(module) is None]
        return f"no {'package' if self.on_node else 'module'} {absent[0]!r}" if absent else None


def npm_version(script: str, package: str) -> str | None:
    """The version of `package` installed beside a Node agent (its folder's node_modules), or None."""
    try:
        found = json.loads((EXAMPLES / script).parent.joinpath("node_modules", package, "package.json").read_text())
    except (OSError, ValueError):
        return None
    return found.get("version") if isinstance(found, dict) else None


@dataclass(frozen=True)
class Runtime:
    """One agent runtime: its extra, its rows, and what its documentation promises."""

    name: str  # the extra (``crashlab[NAME]``) and the loop's name (``--loop NAME``)
    title: str
    distribution: str  # the package whose version the table gives
    rows: dict[str, str]  # slug -> the row's name; the first is the loop as the runtime's user writes it
    guarantee: str  # the documentation's own words on a tool call interrupted mid-flight
    source: str  # where those words are
    notes: dict[str, str] = field(default_factory=dict)  # slug -> why that row exists (a setting, a key)
    #: The rows that run a reply's tool calls on threads, which the harness schedules (`crashlab.protocols.schedule`).
    scheduled: frozenset[str] = frozenset()
    #: Whether all it keeps is in files of the run directory (checked by a sweep shared and not agreeing
    #: scenario by scenario), so a sweep killed for real may restart it from copies of them.
    kept_in_directory: bool = False
    #: Columns of its databases that it stamps with a clock or a random ID and never acts on, as (table, column);
    #: checked as `kept_in_directory` is (`Variant.volatile`).
    volatile: frozenset[tuple[str, str]] = frozenset()
    #: A pattern of the values it mints afresh and acts on only by equality and order (`Variant.minted`).
    minted: bytes = b""
    #: The agent of examples/agents/ written on it, swept from outside beside its rows, or None.
    agent: Agent | None = None

    @property
    def install(self) -> str:
        """The command that installs it."""
        return f"pip install 'crashlab[{self.name}]'"

    def outside(self) -> dict[str, str]:
        """Its agent's rows, swept from outside: slug -> its command as its user runs it (none without an agent)."""
        return self.agent.rows() if self.agent is not None else {}

    def version(self) -> str | None:
        """The installed version, or None when its extra is not installed."""
        from importlib import metadata  # 12 ms of imports a sweep of crashlab's own loops does not need

        try:
            return metadata.version(self.distribution)
        except metadata.PackageNotFoundError:
            return None

    def unloadable(self) -> str | None:
        """Why its loop cannot be imported though its distribution is installed (its extra partly installed:
        LangGraph without its SQLite checkpointer), or None: the loop is imported here, where a sweep's warm parent
        would import it, so that a runtime that cannot run is named before the sweeps and not found by one."""
        try:
            import_module(f"{__name__}.{self.name}.loop")
        except ImportError as error:
            return str(error)
        return None


@dataclass(frozen=True)
class SDK(Runtime):
    """An SDK that is no runtime: the model's client alone, under a tool loop its program writes by hand, which keeps
    what it keeps itself. It has no rows of crashlab's, only its agent's, so its promise is none (``""``); its
    version is its Python distribution's, or, with `npm`, that of the npm package installed beside its agent."""

    npm: bool = False

    @property
    def install(self) -> str:
        return self.agent.install if self.agent is not None else super().install

    def version(self) -> str | None:
        if self.npm and self.agent is not None:
            return npm_version(self.agent.script, self.distribution)
        return super().version()

    def unloadable(self) -> str | None:
        return self.agent.missing() if self.agent is not None else None


#: The SDKs of examples/agents/ that are no runtime, each with its agent, by name: after the runtimes, in the table.
SDKS = {sdk.name: sdk for sdk in (
    SDK(name="openai-python", title="openai (Python)", distribution="openai", rows={}, guarantee="",
        source="https://github.com/openai/openai-python",
        agent=Agent("openai-python", "openai_loop.py", ("openai",))),
    SDK(name="openai-node", title="openai (npm, on Node)", distribution="openai", rows={}, guarantee="",
        source="https://github.com/openai/openai-node", npm=True,
        agent=Agent("openai-node", "node/agent.mjs", ("openai",))),
)}


@cache
def runtimes() -> dict[str, Runtime]:
    """Every runtime package here, by name, in alphabetical order."""
    found = [import_module(f"{__name__}.{module.name}").RUNTIME
             for module in pkgutil.iter_modules(__path__) if module.ispkg]
    return {runtime.name: runtime for runtime in sorted(found, key=lambda r: r.name)}


def frameworks() -> dict[str, Runtime]:
    """What `crashlab frameworks` sweeps, by name: every runtime, then every SDK of examples/agents/ that is none."""
    return {**runtimes(), **SDKS}
