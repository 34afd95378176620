"""The sweep's table, for people (tabulate) and for scripts (JSON, CSV), and the golden-file check."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path

from tabulate import tabulate

from .sweep import Row

#: The table's columns: the Row field, and the head the book prints over it.
COLUMNS: tuple[tuple[str, str], ...] = (
    ("once", "once"),
    ("twice", "twice"),
    ("with_dups", "with dups"),
    ("dups", "dups"),
    ("missing", "missing"),
    ("asks", "asks"),
    ("calls_plus", "calls+"),
)


def table(rows: Sequence[Row]) -> str:
    """The book's table, as a pipe table: readable in a terminal, diff-friendly in a golden file."""
    heads = ["variant", *(head for _, head in COLUMNS)]
    body = [[row.name, *(getattr(row, field) for field, _ in COLUMNS)] for row in rows]
    return tabulate(body, headers=heads, tablefmt="github")


def to_json(rows: Sequence[Row]) -> str:
    return json.dumps([asdict(row) for row in rows], indent=2)


def to_csv(rows: Sequence[Row]) -> str:
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=list(asdict(rows[0])) if rows else [], lineterminator="\n")
    writer.writeheader()
    writer.writerows(asdict(row) for row in rows)
    return out.getvalue()


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


def compare(rows: Sequence[Row], golden: dict[str, dict[str, int]]) -> list[str]:
    """Every cell that differs from the golden table, one line each; empty when all agree."""
    differences = []
    for row in rows:
        expected = golden.get(row.name)
        if expected is None:
            differences.append(f"{row.name}: not in the golden file")
            continue
        for field, head in COLUMNS:
            if head in expected and expected[head] != getattr(row, field):
                differences.append(f"{row.name} / {head}: golden {expected[head]}, swept {getattr(row, field)}")
    return differences
