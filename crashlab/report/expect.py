"""Expectations: the most of each count a project allows its loop, checked against every sweep.

A golden file pins a table exactly, which suits a book; a project's guarantee is a bound ("no
duplicates, at most 40 questions"), and a sweep that does better must not fail. An expectations
file names, per variant, the most each count may come to:

    keys-markers:
      dups: 0
      missing: 0
    markers:
      asks: 700

A variant it does not name is not checked; one it names that was not swept is a difference.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from crashlab.engine.tree import Row
from crashlab.errors import BadInput
from crashlab.job import shown
from crashlab.job.reader import read_bytes, utf8
from crashlab.job.yamlfile import parse_yaml
from crashlab.protocols.outcome import COUNT_KEYS

#: The counts an expectation may bound: a row's, by their JSON keys.
BOUNDED = (*COUNT_KEYS, "windows")
MAX_EXPECT_BYTES = 1 << 20


class ExpectError(BadInput):
    """An expectations file this module cannot read exactly."""


def read_expectations(path: str | Path) -> dict[str, dict[str, int]]:
    """{variant: {count: most}}, refusing anything but a mapping of variants to mappings of known counts to
    non-negative integers: a bound crashlab misread would pass a sweep it should fail."""
    text = utf8(read_bytes(path, str(path), what="expectations file", error=ExpectError, limit=MAX_EXPECT_BYTES),
                str(path), ExpectError)
    try:
        data = parse_yaml(text, str(path))
    except BadInput as error:
        raise ExpectError(str(error)) from None
    if not isinstance(data, dict) or not data:
        raise ExpectError(f"{path}: expected a mapping of variants to their bounds (dups: 0, asks: 40)")
    expected: dict[str, dict[str, int]] = {}
    for variant, bounds in data.items():
        if not isinstance(variant, str):
            raise ExpectError(f"{path}: a variant is named by a string (got {shown(variant)})")
        if not isinstance(bounds, dict) or not bounds:
            raise ExpectError(f"{path}: {shown(variant)}: expected a mapping of counts to their most (dups: 0)")
        for key, most in bounds.items():
            if key not in BOUNDED:
                raise ExpectError(f"{path}: {shown(variant)}: unknown count {shown(key)} (known: {', '.join(BOUNDED)})")
            if isinstance(most, bool) or not isinstance(most, int) or most < 0:
                raise ExpectError(f"{path}: {shown(variant)} / {key}: {shown(most)} is not a count (0 or more)")
        expected[variant] = dict(bounds)
    return expected


def compare(rows: Sequence[Row], expected: dict[str, dict[str, int]]) -> list[str]:
    """Every count past its bound, and every expected variant not swept, one line each; empty when all hold.

    A variant is named by its slug or by the name the table prints."""
    swept = {name: row for row in rows for name in (row.name, row.variant)}
    differences = []
    for name, bounds in expected.items():
        row = swept.get(name)
        if row is None:
            differences.append(f"{name}: expected, but not swept")
            continue
        for key, most in bounds.items():
            actual = getattr(row, key)
            if actual > most:
                differences.append(f"{name} / {key}: {actual}, expected at most {most}")
    return differences
