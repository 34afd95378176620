"""The sweep's results: tables for people, JSON and CSV for scripts, files on disk, the golden check."""

from __future__ import annotations

import csv
import io
import json
import os
import re
import shlex
import shutil
import sys
import tempfile
from collections.abc import Callable, Iterable, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import crashlab
from crashlab.engine.sweep import Row, ScenarioResult
from crashlab.job import Job, read_bytes, shown, utf8

Columns = tuple[tuple[str, str], ...]

#: The book's table: each column's key (a Row attribute, and the JSON/CSV key) and its head.
DESIGN_COLUMNS: Columns = (
    ("once", "once"),
    ("twice", "twice"),
    ("distinct", "distinct"),
    ("with_dups", "with dups"),
    ("dups", "dups"),
    ("missing", "missing"),
    ("wrong", "wrong"),
    ("asks", "asks"),
    ("calls_plus", "calls+"),
)
#: The agent's table: the same counts, with approvals, and the sum of the scenarios after the depths.
AGENT_COLUMNS: Columns = (
    ("points", "points"),
    ("twice", "twice"),
    ("scenarios", "scenarios"),
    ("distinct", "distinct"),
    ("with_dups", "with dups"),
    ("dups", "dups"),
    ("missing", "missing"),
    ("wrong", "wrong"),
    ("asks", "asks"),
    ("approvals", "approvals"),
    ("calls_plus", "calls+"),
)
#: The heads of the scenario counts by number of crashes, from one; deeper than these, ``K×``.
DEPTH_HEADS = ("once", "twice", "thrice")
#: The columns that count scenarios by depth: the ones a table of another depth has more or fewer of.
_DEPTH_KEYS = {"once", "points", "twice"}


def depth_key(k: int) -> str:
    """The Row key of the scenarios with `k` crashes (see `Row.crashed`)."""
    return {1: "once", 2: "twice"}.get(k, f"crashed{k}")


def at_depth(columns: Columns, depth: int) -> Columns:
    """`columns` for a sweep of `depth`: one column per number of crashes, where the depth-2 table has two."""
    first = columns[0]
    rest = [c for c in columns[1:] if c[0] not in _DEPTH_KEYS]
    deeper = [(depth_key(k), DEPTH_HEADS[k - 1] if k <= len(DEPTH_HEADS) else f"{k}×") for k in range(2, depth + 1)]
    return (first, *deeper, *rest)


def cell(row: Row, key: str) -> Any:
    if key.startswith("crashed"):
        return row.crashed(int(key.removeprefix("crashed")))
    return getattr(row, key)


def records(rows: Sequence[Row], columns: Columns) -> list[dict[str, Any]]:
    """The rows as data: the columns' cells, and always the scenarios by depth and their sum, and the two
    counts every fault's rows carry (`crashlab.faults`): runs stuck on an unreadable checkpoint, orphan records."""
    return [
        {"variant": row.variant, "name": row.name, **{k: cell(row, k) for k, _ in columns},
         "by_depth": list(row.by_depth), "scenarios": row.scenarios, "distinct": row.distinct, "stuck": row.stuck,
         "orphans": row.orphans}
        for row in rows
    ]


def table(rows: Sequence[Row], columns: Columns = DESIGN_COLUMNS) -> str:
    """A pipe table: readable in a terminal, diff-friendly in a golden file."""
    heads = ["variant", *(head for _, head in columns)]
    body = [[row.name, *(cell(row, key) for key, _ in columns)] for row in rows]
    return grid(body, heads, "github")


def grid(body: Sequence[Sequence[Any]], headers: Sequence[str] = (), style: str = "plain") -> str:
    """Rows lined up in columns (tabulate, imported only when a table is printed)."""
    from tabulate import tabulate

    return tabulate(body, headers=list(headers), tablefmt=style)


def to_json(rows: Sequence[Row], columns: Columns = DESIGN_COLUMNS) -> str:
    return json.dumps(records(rows, columns), indent=2)


def to_csv(rows: Sequence[Row], columns: Columns = DESIGN_COLUMNS) -> str:
    flat = [{k: v for k, v in r.items() if k != "by_depth"} for r in records(rows, columns)]
    keys = [*(k for k, _ in columns), "scenarios", "distinct", "stuck", "orphans"]
    return csv_text(flat, ["variant", "name", *dict.fromkeys(keys)])


def csv_text(data: Sequence[dict[str, Any]], fieldnames: Sequence[str]) -> str:
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=fieldnames, lineterminator="\n")
    writer.writeheader()
    writer.writerows(data)
    return out.getvalue()


def scenario_record(result: ScenarioResult) -> dict[str, Any]:
    """One line of scenarios.jsonl."""
    o = result.outcome
    return {
        "id": result.id,
        "variant": result.variant,
        "crashes": list(result.crashes),
        "labels": list(result.labels),
        "dups": o.extra,
        "dup_calls": o.dups,
        "missing": len(o.missing),
        "wrong": len(o.wrong),
        "asks": o.asks,
        "approvals": o.approvals,
        "calls_plus": o.calls_plus,
    }


#: The files a results directory holds; manifest.json is written last, so it vouches for the others.
RESULT_FILES = ("scenarios.jsonl", "summary.json", "summary.csv", "manifest.json")


class ResultsError(ValueError):
    """An --out that cannot hold results; the message names it and why."""


class PendingResults:
    """Results on their way to `out`: checked and begun before the sweep, put in place after it.

    The files are written into a fresh hidden directory beside `out`, so a sweep that fails or is
    stopped leaves nothing half-written. A new `out` appears complete, in one rename; into an
    existing directory (which may hold other files, such as a golden table) each result file is
    renamed over its old copy, manifest.json last.
    """

    def __init__(self, out: str | Path):
        if str(out).strip() == "":
            raise ResultsError("--out needs a directory name (got an empty one)")
        self.out = Path(out)
        if self.out.exists() and not self.out.is_dir():
            raise ResultsError(f"cannot write results to {out}: it exists and is not a directory")
        parent = self.out.absolute().parent
        blocker = next((p for p in (parent, *parent.parents) if p.exists()), None)
        if blocker is not None and not blocker.is_dir():
            raise ResultsError(f"cannot write results to {out}: {blocker} is not a directory")
        try:
            parent.mkdir(parents=True, exist_ok=True)
            self.temp = Path(tempfile.mkdtemp(prefix=f".{self.out.absolute().name}.", suffix=".tmp", dir=parent))
        except OSError as error:
            raise ResultsError(f"cannot write results to {out}: {error.strerror}") from None

    def commit(self, job: Job, rows: Sequence[Row], scenarios: Iterable[ScenarioResult], columns: Columns) -> None:
        self.put(lambda into: write_results(into, job, rows, scenarios, columns), RESULT_FILES)

    def put(self, write: Callable[[Path], None], names: Sequence[str]) -> None:
        """Write the files `names` with `write` into the hidden directory, then put them in place."""
        try:
            write(self.temp)
            if not self.out.exists():
                os.rename(self.temp, self.out)
                return
            for name in names:
                os.replace(self.temp / name, self.out / name)
        except OSError as error:
            raise ResultsError(f"cannot write results to {self.out}: {error.strerror}") from None
        finally:
            self.discard()

    def discard(self) -> None:
        shutil.rmtree(self.temp, ignore_errors=True)


def write_results(out: Path, job: Job, rows: Sequence[Row], scenarios: Iterable[ScenarioResult], columns: Columns) -> None:
    """The sweep on disk: every scenario, the table as JSON and CSV, and how it was made."""
    out.mkdir(parents=True, exist_ok=True)
    with open(out / "scenarios.jsonl", "w", encoding="utf-8") as file:
        for result in scenarios:
            file.write(json.dumps(scenario_record(result)) + "\n")
    (out / "summary.json").write_text(to_json(rows, columns) + "\n", encoding="utf-8")
    (out / "summary.csv").write_text(to_csv(rows, columns), encoding="utf-8")
    (out / "manifest.json").write_text(json.dumps(manifest(job), indent=2) + "\n", encoding="utf-8")


def manifest(job: Job) -> dict[str, Any]:
    """How the results were made: the exact job bytes that were swept, and the software that swept them."""
    return {
        "crashlab": crashlab.__version__,
        "job": job.source,
        "job_sha256": job.sha256,
        "command": shlex.join(["crashlab", *sys.argv[1:]]),
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "python": sys.version.split()[0],
        "dependencies": dependency_versions(),
    }


def dependency_versions() -> dict[str, str]:
    """The installed version of each of crashlab's own requirements (its extras left out)."""
    from importlib import metadata

    try:
        required = metadata.requires("crashlab") or []
    except metadata.PackageNotFoundError:
        return {}
    versions = {}
    for requirement in required:
        if "extra ==" in requirement:
            continue
        name = re.match(r"[A-Za-z0-9._-]+", requirement).group()
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = "not installed"
    return versions


class GoldenError(ValueError):
    """A golden file that does not hold a table this module can read."""


#: Every column head a golden table may name, mapped to the Row key it checks (to depth 8 and more).
KNOWN_HEADS: dict[str, str] = {
    head: key for key, head in (*at_depth(DESIGN_COLUMNS, 8), *at_depth(AGENT_COLUMNS, 8))
}
#: The golden file's first column: the variant's name as the table prints it (or its slug).
ROW_HEAD = "variant"
MAX_GOLDEN_BYTES = 1 << 20


def read_golden(path: str | Path) -> dict[str, dict[str, int]]:
    """Parse a pipe table into {variant name: {column head: value}}, refusing anything it cannot vouch for.

    Lines outside the table are ignored. The first column is `variant`; every other head must be
    one of the tables' (KNOWN_HEADS), named once; every row once; every cell ASCII digits.
    """
    data = read_bytes(path, str(path), what="golden file", error=GoldenError, limit=MAX_GOLDEN_BYTES)
    text = utf8(data, str(path), GoldenError)
    lines = [line.strip() for line in text.splitlines()]
    rows = [[cell.strip() for cell in line.strip("|").split("|")] for line in lines if line.startswith("|")]
    rows = [row for row in rows if not all(set(cell) <= set(":-") for cell in row)]
    if len(rows) < 2:
        raise GoldenError(f"{path}: no table found (a header row and at least one variant row)")
    heads = rows[0]
    if heads[0] != ROW_HEAD:
        raise GoldenError(f"{path}: the first column must be {ROW_HEAD!r} (got {shown(heads[0])})")
    if len(heads) < 2:
        raise GoldenError(f"{path}: the table names no column to check (known: {', '.join(KNOWN_HEADS)})")
    for k, head in enumerate(heads[1:], start=1):
        if head in heads[:k]:
            raise GoldenError(f"{path}: column {head!r} appears twice")
        if head not in KNOWN_HEADS:
            raise GoldenError(f"{path}: unknown column {shown(head)} (known: {', '.join(KNOWN_HEADS)})")
    golden: dict[str, dict[str, int]] = {}
    for row in rows[1:]:
        name = row[0]
        if len(row) != len(heads):
            raise GoldenError(f"{path}: row {shown(name)} has {len(row)} cells, the header has {len(heads)}")
        if name in golden:
            raise GoldenError(f"{path}: row {shown(name)} appears twice")
        for head, cell in zip(heads[1:], row[1:]):
            if not re.fullmatch("[0-9]{1,12}", cell):
                raise GoldenError(f"{path}: row {shown(name)}, column {head!r}: {shown(cell)} is not a count "
                                  "(ASCII digits)")
        golden[name] = {head: int(cell) for head, cell in zip(heads[1:], row[1:])}
    return golden


def compare(rows: Sequence[Row], golden: dict[str, dict[str, int]]) -> list[str]:
    """Every difference from the golden table, one line each; empty when it all agrees.

    Exactly the golden file's rows and columns are compared, whichever columns the table printed: a
    golden row that was not swept, and a swept row that the golden file lacks, are differences too.
    A golden row names a variant by the name the table prints, or by its slug.
    """
    differences = []
    swept = {name: row for row in rows for name in (row.name, row.variant)}
    for name, expected in golden.items():
        row = swept.get(name)
        if row is None:
            differences.append(f"{name}: in the golden file, but not swept")
            continue
        for head, value in expected.items():
            actual = cell(row, KNOWN_HEADS[head])
            if actual != value:
                differences.append(f"{name} / {head}: golden {value}, swept {actual}")
    for row in rows:
        if row.name not in golden and row.variant not in golden:
            differences.append(f"{row.name}: swept, but not in the golden file")
    return differences
