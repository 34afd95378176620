"""The runtimes' table: for every installed agent runtime, what its documentation promises for an
interrupted tool call beside what a sweep that kills it for real measured, row by row and depth by depth.

A promise is quoted, never paraphrased, so that a reader can hold the runtime to its own words; the
figures come from the sweep run now (`measure`), never from a file.
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
    body = [[m.runtime.title, m.version, row.variant, m.runtime.notes.get(row.variant, ""), depth,
             *(getattr(row, key) for key in SHOWN)]
            for m in measured for depth, rows in sorted(m.rows.items()) for row in rows]
    lines = [grid(body, ["runtime", "version", "row", "setting", "depth", *SHOWN.values()], "github"), ""]
    for m in measured:
        lines.append(f'{m.runtime.title}: "{m.runtime.guarantee}" ({m.runtime.source})')
    return "\n".join(lines)


def records(measured: Sequence[Measured]) -> list[dict[str, Any]]:
    """The table as data: a runtime each, its promise, and every count of each row at each depth."""
    return [{"runtime": m.runtime.name, "title": m.runtime.title, "version": m.version,
             "guarantee": m.runtime.guarantee, "source": m.runtime.source,
             "rows": [{"variant": slug, "name": name, "setting": m.runtime.notes.get(slug, ""),
                       "depths": {str(depth): _counts(next(r for r in rows if r.variant == slug))
                                  for depth, rows in sorted(m.rows.items())}}
                      for slug, name in m.runtime.rows.items()]}
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
