"""The sweep's results: tables for people, JSON and CSV for scripts, files on disk, the golden check."""

from __future__ import annotations

import csv
import hashlib
import io
import json
import shlex
import sys
from collections.abc import Sequence
from dataclasses import asdict
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from tabulate import tabulate

from . import __version__
from .job import Job
from .sweep import Row, ScenarioResult

Columns = tuple[tuple[str, str], ...]

#: The book's table: each column's key (a Row attribute, and the JSON/CSV key) and its head.
DESIGN_COLUMNS: Columns = (
    ("once", "once"),
    ("twice", "twice"),
    ("with_dups", "with dups"),
    ("dups", "dups"),
    ("missing", "missing"),
    ("wrong", "wrong"),
    ("asks", "asks"),
    ("calls_plus", "calls+"),
)
#: The agent's table: the same counts, with approvals, and scenarios in place of once and twice.
AGENT_COLUMNS: Columns = (
    ("points", "points"),
    ("scenarios", "scenarios"),
    ("with_dups", "with dups"),
    ("dups", "dups"),
    ("missing", "missing"),
    ("wrong", "wrong"),
    ("asks", "asks"),
    ("approvals", "approvals"),
    ("calls_plus", "calls+"),
)


def records(rows: Sequence[Row], columns: Columns) -> list[dict[str, Any]]:
    return [{"variant": row.variant, "name": row.name, **{k: getattr(row, k) for k, _ in columns}} for row in rows]


def table(rows: Sequence[Row], columns: Columns = DESIGN_COLUMNS) -> str:
    """A pipe table: readable in a terminal, diff-friendly in a golden file."""
    heads = ["variant", *(head for _, head in columns)]
    body = [[row.name, *(getattr(row, key) for key, _ in columns)] for row in rows]
    return tabulate(body, headers=heads, tablefmt="github")


def to_json(rows: Sequence[Row], columns: Columns = DESIGN_COLUMNS) -> str:
    return json.dumps(records(rows, columns), indent=2)


def to_csv(rows: Sequence[Row], columns: Columns = DESIGN_COLUMNS) -> str:
    return csv_text(records(rows, columns), ["variant", "name", *(k for k, _ in columns)])


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


def write_results(out: Path, job: Job, rows: Sequence[Row], scenarios: Sequence[ScenarioResult], columns: Columns) -> None:
    """The sweep on disk: every scenario, the table as JSON and CSV, and how it was made."""
    out.mkdir(parents=True, exist_ok=True)
    with open(out / "scenarios.jsonl", "w", encoding="utf-8") as file:
        for result in scenarios:
            file.write(json.dumps(scenario_record(result)) + "\n")
    (out / "summary.json").write_text(to_json(rows, columns) + "\n", encoding="utf-8")
    (out / "summary.csv").write_text(to_csv(rows, columns), encoding="utf-8")
    manifest = {
        "crashlab": __version__,
        "job": job.source,
        "job_sha256": hashlib.sha256(Path(job.source).read_bytes()).hexdigest(),
        "command": shlex.join(["crashlab", *sys.argv[1:]]),
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
    }
    (out / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")


class GoldenError(ValueError):
    """A golden file that does not hold a table this module can read."""


def read_golden(path: str | Path) -> dict[str, dict[str, int]]:
    """Parse a pipe table into {variant name: {column head: value}}."""
    try:
        lines = [line.strip() for line in Path(path).read_text(encoding="utf-8").splitlines()]
    except OSError as error:
        raise GoldenError(f"{path}: cannot read golden file: {error.strerror}") from None
    rows = [[cell.strip() for cell in line.strip("|").split("|")] for line in lines if line.startswith("|")]
    rows = [row for row in rows if not all(set(cell) <= set(":-") for cell in row)]
    if len(rows) < 2:
        raise GoldenError(f"{path}: no table found (a header row and at least one variant row)")
    heads, golden = rows[0], {}
    for row in rows[1:]:
        if len(row) != len(heads):
            raise GoldenError(f"{path}: row {row[0]!r} has {len(row)} cells, the header has {len(heads)}")
        try:
            golden[row[0]] = {head: int(cell) for head, cell in zip(heads[1:], row[1:])}
        except ValueError:
            raise GoldenError(f"{path}: row {row[0]!r} has a cell that is not an integer") from None
    return golden


def compare(rows: Sequence[Row], golden: dict[str, dict[str, int]], columns: Columns = DESIGN_COLUMNS) -> list[str]:
    """Every cell that differs from the golden table, one line each; empty when all agree."""
    differences = []
    for row in rows:
        expected = golden.get(row.name)
        if expected is None:
            differences.append(f"{row.name}: not in the golden file")
            continue
        for key, head in columns:
            if head in expected and expected[head] != getattr(row, key):
                differences.append(f"{row.name} / {head}: golden {expected[head]}, swept {getattr(row, key)}")
    return differences
