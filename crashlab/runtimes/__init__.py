"""The agent runtimes crashlab sweeps, one package each: the seam a new runtime plugs into.

A runtime's package holds two modules. Its ``__init__`` names it (`Runtime`: its rows, its version,
the guarantee its documentation gives for an interrupted tool call) and imports nothing heavy, so
the registry, `crashlab --help` and `crashlab frameworks` can list every runtime without loading
one. Its ``loop`` module is the job written as that runtime's user writes it, with ``entry(slug,
run)``: the only module that imports the runtime, loaded when a process first runs it. (DBOS's
package has one more, ``launch``, which Pydantic AI's durable rows share.)

A runtime is found by being here: adding one is adding a package, and nothing else learns its name.
"""

from __future__ import annotations

import pkgutil
from dataclasses import dataclass, field
from functools import cache
from importlib import import_module


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


@cache
def runtimes() -> dict[str, Runtime]:
    """Every runtime package here, by name, in alphabetical order."""
    found = [import_module(f"{__name__}.{module.name}").RUNTIME
             for module in pkgutil.iter_modules(__path__) if module.ispkg]
    return {runtime.name: runtime for runtime in sorted(found, key=lambda r: r.name)}
