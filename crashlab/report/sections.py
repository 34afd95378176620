"""The report's tables beside its timelines: the fault matrix, and the runtimes' table with each runtime's
promise quoted.

They come from other sweeps than the timelines' (`sweep --fault all --out DIR` writes a matrix,
`frameworks --out DIR` the runtimes' table), found beside the sweep's files (``results/faults``,
``results/frameworks``) or named. A few hundred cells need no script: they are drawn here as HTML,
so a page read without one still holds them, and the page's filters only hide and dim them by their
``data-`` attributes. A section whose sweep is missing says so and how to sweep it; a file that is
there but cannot be read exactly is refused, as the sweep's own files are.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from html import escape
from pathlib import Path
from typing import Any, Literal

import msgspec

from crashlab.report.frameworks import SHOWN
from crashlab.report.html import ReportError
from crashlab.report.matrix import text

#: A cell's outcome as the page names and colours the same harm on its timelines.
KIND = {"stuck": "stuck", "missing": "missing", "dups": "duplicate", "asks": "asked", "clean": "clean",
        "no scenario": "none"}

#: The file each section reads, and the command that writes it into a directory.
MATRIX, RUNTIMES = "matrix.json", "frameworks.json"
WRITES = {MATRIX: "crashlab sweep --fault all --out {} writes one", RUNTIMES: "crashlab frameworks --out {} writes one"}


class Cell(msgspec.Struct):
    """A matrix cell as `crashlab.report.matrix` writes it: the worst outcome, and the row's count of it."""

    outcome: Literal["stuck", "missing", "dups", "asks", "clean", "no scenario"]
    count: int


class MatrixFile(msgspec.Struct):
    """matrix.json: the columns, and a row per variant holding its variant, name and a cell per column."""

    columns: list[str]
    rows: list[dict[str, Cell | str]]


#: The counts of a runtime's row the table shows, each a whole number.
Counts = msgspec.defstruct("Counts", [(key, int) for key in SHOWN])


class RuntimeRow(msgspec.Struct):
    variant: str
    name: str
    setting: str
    depths: dict[str, Counts]  # type: ignore[valid-type]  # (made from SHOWN, so the two cannot drift apart)
    #: How the row was swept (`crashlab.report.frameworks.swept_as`): a table written before any agent was swept
    #: from outside has none, its every row the adapter's.
    swept_as: Literal["adapter", "command"] = "adapter"


class Runtime(msgspec.Struct):
    """A runtime as `crashlab.report.frameworks.records` writes it: its promise, where it is written, its rows."""

    runtime: str
    title: str
    version: str
    guarantee: str
    source: str
    rows: list[RuntimeRow]


@dataclass(frozen=True)
class Matrix:
    """A fault matrix and where it came from: its directory, and the command its manifest names."""

    where: Path
    command: str
    columns: list[str]
    rows: list[dict[str, Any]]


@dataclass(frozen=True)
class Runtimes:
    """The runtimes' table as `frameworks --out` wrote it, and each runtime's own fault matrix found beside it."""

    where: Path
    runtimes: list[Runtime]
    matrices: dict[str, Matrix]  # runtime name -> its matrix (DIR/NAME/matrix.json)


def find(directory: str | Path, named: str | None, default: str, file: str) -> Path | None:
    """The directory a section reads: the one named (which must hold `file`), else DIR/`default` if it does."""
    if named is not None:
        if not (Path(named) / file).is_file():
            raise ReportError(f"{named} has no {file}: {WRITES[file].format(named)}")
        return Path(named)
    beside = Path(directory) / default
    return beside if (beside / file).is_file() else None


def read_matrix(where: Path) -> Matrix:
    """The matrix in `where`, every cell checked: each row names its variant and has a cell in every column."""
    data = _load(where / MATRIX)
    try:
        checked = msgspec.convert(data, MatrixFile)
        for row in checked.rows:
            for key in ("variant", "name"):
                if not isinstance(row.get(key), str):
                    raise msgspec.ValidationError(f"a row's {key} must be text")
            for c in checked.columns:
                if not isinstance(row.get(c), Cell):
                    raise msgspec.ValidationError(f"{row['variant']} has no cell for {c}")
    except msgspec.ValidationError as error:
        raise ReportError(f"{where / MATRIX} is not a fault matrix: {error}") from None
    return Matrix(where, _command(where), checked.columns, data["rows"])


def read_runtimes(where: Path) -> Runtimes:
    """The runtimes' table in `where`, each runtime's promise and every count shown checked, and the fault
    matrix of each runtime that `sweep --loop NAME --fault all --out DIR/NAME` swept beside it."""
    try:
        runtimes = msgspec.convert(_load(where / RUNTIMES), list[Runtime])
    except msgspec.ValidationError as error:
        raise ReportError(f"{where / RUNTIMES} is not a runtimes' table: {error}") from None
    return Runtimes(where, runtimes, {r.runtime: read_matrix(where / r.runtime) for r in runtimes
                                      if (where / r.runtime / MATRIX).is_file()})


@dataclass(frozen=True)
class Beside:
    """What the page shows beside its timelines: the matrix and the runtimes found for DIR, None where none was."""

    directory: Path
    matrix: Matrix | None
    runtimes: Runtimes | None

    def html(self) -> str:
        """Both sections, each drawn, or said not swept with the command that sweeps it."""
        matrix = (matrix_html(self.matrix, "the fault matrix: the worst outcome of each fault") if self.matrix else
                  _absent("the fault matrix", f"{self.directory} holds no faults/{MATRIX}",
                          f"crashlab sweep --fault all --out {self.directory / 'faults'}", "--faults DIR"))
        runtimes = (runtimes_html(self.runtimes) if self.runtimes else
                    _absent("the runtimes", f"{self.directory} holds no frameworks/{RUNTIMES}",
                            f"crashlab frameworks --out {self.directory / 'frameworks'}", "--frameworks DIR"))
        return f'<section id="matrix">{matrix}</section>\n<section id="runtimes">{runtimes}</section>'

    def said(self) -> str:
        """The sections in a few words, for the line `crashlab report` ends with."""
        return ", ".join([f"the fault matrix of {self.matrix.where}" if self.matrix else "no fault matrix",
                          f"{len(self.runtimes.runtimes)} runtimes of {self.runtimes.where}" if self.runtimes else
                          "no runtimes' table"])


def beside(directory: str | Path, faults: str | None = None, frameworks: str | None = None) -> Beside:
    """The sections for the results in `directory`: those named, else those beside its files."""
    matrix, runtimes = find(directory, faults, "faults", MATRIX), find(directory, frameworks, "frameworks", RUNTIMES)
    return Beside(Path(directory), read_matrix(matrix) if matrix else None,
                  read_runtimes(runtimes) if runtimes else None)


def matrix_html(m: Matrix, title: str) -> str:
    """A matrix as a table: a row per variant, a column per fault, each cell its worst outcome, coloured."""
    head = "".join(f'<th data-fault="{escape(c)}">{escape(c)}</th>' for c in m.columns)
    body = "".join(
        f'<tr data-variant="{escape(row["variant"])}"><th title="{escape(row["variant"])}">{escape(row["name"])}</th>'
        + "".join(_cell(row, c) for c in m.columns) + "</tr>" for row in m.rows)
    said = f"swept by <code>{escape(m.command)}</code>" if m.command else f"read from {escape(str(m.where))}"
    return (f'<h2>{escape(title)}</h2><p class="summary">{said}; each cell is the worst that any scenario of its '
            f"fault came to, and the row's count of it</p>"
            f'<table class="matrix"><tr><th>variant</th>{head}</tr>{body}</table>')


def runtimes_html(r: Runtimes) -> str:
    """The runtimes' table: each runtime headed by its promise, quoted with where it is written, then its rows
    at each depth swept; below it, the fault matrix of each runtime that has one."""
    heads = ["row", "swept as", "setting", "depth", *SHOWN.values()]
    parts = []
    for runtime in r.runtimes:
        quoted = f"<q>{escape(runtime.guarantee)}</q>" if runtime.guarantee else "no runtime, so no promise"
        promise = (f'<tr><th colspan="{len(heads)}" class="promise">{escape(runtime.title)} {escape(runtime.version)}: '
                   f"{quoted} <cite>{escape(runtime.source)}</cite></th></tr>")
        rows = "".join(
            f'<tr data-variant="{escape(row.variant)}" title="{escape(row.name)}"><td>{escape(row.variant)}</td>'
            f"<td>{escape(row.swept_as)}</td><td>{escape(row.setting)}</td><td>{escape(depth)}</td>"
            + "".join(f"<td>{getattr(counts, key):,}</td>" for key in SHOWN) + "</tr>"
            for row in runtime.rows for depth, counts in row.depths.items())
        parts.append(f'<tbody data-runtime="{escape(runtime.runtime)}">{promise}{rows}</tbody>')
    table = (f'<table class="runtimes"><thead><tr>{"".join(f"<th>{h}</th>" for h in heads)}</tr></thead>'
             f'{"".join(parts)}</table>')
    titles = {runtime.runtime: runtime.title for runtime in r.runtimes}
    below = "".join(matrix_html(m, f"{titles[name]} under every fault that reaches it")
                    for name, m in r.matrices.items())
    return ("<h2>the runtimes: each one's promise for an interrupted tool call, quoted, and what killing it "
            f'measured</h2><p class="summary">read from {escape(str(r.where / RUNTIMES))}</p>{table}{below}')


def _cell(row: dict[str, Any], column: str) -> str:
    kind = KIND[row[column]["outcome"]]
    return (f'<td class="{kind}" data-fault="{escape(column)}" data-outcome="{kind}" '
            f'title="{escape(row["name"])} under {escape(column)}">{escape(text(row[column]))}</td>')


def _absent(what: str, why: str, command: str, option: str) -> str:
    return (f'<h2>{what}</h2><p class="summary absent">Not swept: {escape(why)}. <code>{escape(command)}</code> '
            f"sweeps it, and <code>crashlab report {option}</code> names one elsewhere.</p>")


def _load(file: Path) -> Any:
    try:
        return json.loads(file.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as error:
        raise ReportError(f"{file}: cannot read it: {error}") from None


def _command(where: Path) -> str:
    """The command the matrix's manifest names, or "" where there is none to read."""
    try:
        said = json.loads((where / "manifest.json").read_text(encoding="utf-8")).get("command", "")
    except (OSError, UnicodeDecodeError, ValueError, AttributeError):
        return ""
    return said if isinstance(said, str) else ""
