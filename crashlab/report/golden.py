"""The golden check: a table in a file, and every cell of it the sweep must equal.

A golden file only checks a table; the table always comes out of the sweep.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

from crashlab.engine.tree import Row
from crashlab.errors import BadInput
from crashlab.job import shown
from crashlab.job.reader import read_bytes, utf8
from crashlab.report.tables import HEADS, cell


class GoldenError(BadInput):
    """A golden file that does not hold a table this module can read."""


#: Every column head a golden table may name, mapped to the Row key it checks (to depth 8).
KNOWN_HEADS: dict[str, str] = {head: key for key, head in HEADS.items()}
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
        for head, text in zip(heads[1:], row[1:], strict=True):
            if not re.fullmatch("[0-9]{1,12}", text):
                raise GoldenError(f"{path}: row {shown(name)}, column {head!r}: {shown(text)} is not a count "
                                  "(ASCII digits)")
        golden[name] = {head: int(text) for head, text in zip(heads[1:], row[1:], strict=True)}
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
