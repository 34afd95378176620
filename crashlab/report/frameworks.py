"""The runtimes' table: for every installed agent runtime, what its documentation promises for an
interrupted tool call beside what a sweep that kills it for real measured, row by row and depth by depth.

A promise is quoted, never paraphrased, so that a reader can hold the runtime to its own words; the
figures come from the sweep run now (`measure`), never from a file. Each row says how it was swept (`swept
as`): through crashlab's adapter of the runtime (``adapter``), or as the unmodified agent of examples/agents/
written on it, a program run from outside (``command``), as `crashlab sweep --command` sweeps it.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from crashlab.engine.tree import Row
from crashlab.report.tables import grid
from crashlab.runtimes import Runtime

#: The counts the table shows, by their Row keys, with their heads.
SHOWN = {"scenarios": "scenarios", "dups": "dups", "missing": "missing", "asks": "asks", "windows": "windows",
         "distinct": "distinct", "flaky": "flaky"}


@dataclass(frozen=True)
class Measured:
    """One runtime: its installed version, and each of its rows' counts at each depth swept."""

    runtime: Runtime
    version: str
    rows: dict[int, list[Row]] = field(default_factory=dict)  # depth -> its rows, in the runtime's order


#: How a row was swept: crashlab's adapter of the runtime, or the unmodified agent as a program, from outside.
ADAPTER, COMMAND = "adapter", "command"


def swept_as(runtime: Runtime, slug: str) -> str:
    return COMMAND if slug in runtime.outside() else ADAPTER


def setting(runtime: Runtime, slug: str) -> str:
    """Why the row exists: the runtime's setting, or the command that runs its agent."""
    return runtime.outside().get(slug) or runtime.notes.get(slug, "")


#: Sweeps a runtime's rows at one depth: (runtime, depth) -> the rows.
Sweeper = Callable[[Runtime, int], list[Row]]


def measure(runtimes: Sequence[Runtime], depths: Sequence[int], sweep: Sweeper) -> list[Measured]:
    """Each installed runtime, swept at each depth; a runtime whose extra is missing is left out."""
    measured = []
    for runtime in runtimes:
        version = runtime.version()
        if version is not None:
            measured.append(Measured(runtime, version, {depth: sweep(runtime, depth) for depth in depths}))
    return measured


def table(measured: Sequence[Measured]) -> str:
    """The rows lined up, then each runtime's promise in its own words, with where they are written."""
    body = [[m.runtime.title, m.version, row.variant, swept_as(m.runtime, row.variant),
             setting(m.runtime, row.variant), depth, *(getattr(row, key) for key in SHOWN)]
            for m in measured for depth, rows in sorted(m.rows.items()) for row in rows]
    lines = [grid(body, ["runtime", "version", "row", "swept as", "setting", "depth", *SHOWN.values()], "github"), ""]
    for m in measured:
        lines.append(f'{m.runtime.title}: "{m.runtime.guarantee}" ({m.runtime.source})' if m.runtime.guarantee else
                     f"{m.runtime.title}: no runtime, so no promise: its program keeps what it keeps "
                     f"({m.runtime.source})")
    return "\n".join(lines)


def records(measured: Sequence[Measured]) -> list[dict[str, Any]]:
    """The table as data: a runtime each, its promise, and every count of each row swept at each depth."""
    return [{"runtime": m.runtime.name, "title": m.runtime.title, "version": m.version,
             "guarantee": m.runtime.guarantee, "source": m.runtime.source,
             "rows": [{"variant": row.variant, "name": row.name, "setting": setting(m.runtime, row.variant),
                       "swept_as": swept_as(m.runtime, row.variant),
                       "depths": {str(depth): _counts(next(r for r in rows if r.variant == row.variant))
                                  for depth, rows in sorted(m.rows.items())}}
                      for row in next(iter(m.rows.values()), [])]}
            for m in measured]


#: What `write` puts in a results directory.
FILES = ("frameworks.txt", "frameworks.json")


def write(into: Path, measured: Sequence[Measured]) -> None:
    """The table and its data, as `crashlab frameworks` prints them: the same on every run of the same versions."""
    (into / FILES[0]).write_text(table(measured) + "\n")
    (into / FILES[1]).write_text(json.dumps(records(measured), indent=2) + "\n")


def _counts(row: Row) -> dict[str, Any]:
    return {"points": row.points, "scenarios": row.scenarios, "by_depth": list(row.by_depth),
            "distinct": row.distinct, "windows": row.windows,
            **{key: getattr(row, key) for key in ("with_dups", "dups", "missing", "orphans", "stuck", "asks",
                                                  "calls_plus", "flaky")}}
