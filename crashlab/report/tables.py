"""A sweep's rows for people and for scripts: the table, JSON and CSV, with the same columns for every fault.

Which columns a table shows depends on whose loops it holds (the book's, the agent's, a loop of
yours) and how deep it swept; every record for scripts holds every count, whatever the table shows.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from crashlab.engine.tree import Row
from crashlab.protocols.outcome import COUNT_HEADS, COUNT_KEYS
from crashlab.protocols.variant import Table

#: A table's columns, by their Row keys.
Columns = tuple[str, ...]

#: The heads of the scenario counts by number of crashes, from one; deeper than these, ``K×``.
DEPTH_HEADS = ("once", "twice", "thrice")


def depth_key(k: int) -> str:
    """The Row key of the scenarios with `k` crashes (see `Row.crashed`)."""
    return {1: "once", 2: "twice"}.get(k, f"crashed{k}")


def depth_head(k: int) -> str:
    return DEPTH_HEADS[k - 1] if k <= len(DEPTH_HEADS) else f"{k}×"


#: Every column's head, by its Row key: the counts' (`crashlab.protocols.outcome.Counts`), and the table's own.
HEADS: dict[str, str] = {
    **{depth_key(k): depth_head(k) for k in range(1, 9)},
    "points": "points",
    "scenarios": "scenarios",
    "distinct": "distinct",
    "windows": "windows",
    "uncrashed": "no crash",
    "orders": "orders",
    **COUNT_HEADS,
}

#: Each table's columns at depth 2: the book's (whose first seven cells the book prints), the agent's
#: (with approvals, and the sum of the scenarios after the depths), and a loop of yours. Beside the
#: scenario counts, which grow with how densely a loop is marked, each shows the distinct states and
#: the failure windows, which do not; the book's own table prints the book's cells, and shows the
#: windows only under a fault (`columns_for`).
COLUMNS: dict[Table, Columns] = {
    "book": ("once", "twice", "distinct", "with_dups", "dups", "missing", "wrong", "asks", "calls_plus"),
    "agent": ("points", "twice", "scenarios", "distinct", "windows", "with_dups", "dups", "missing", "wrong", "asks",
              "approvals", "calls_plus"),
    "loop": ("points", "twice", "scenarios", "distinct", "windows", "with_dups", "dups", "missing", "orphans", "stuck",
             "asks", "calls_plus", "flaky"),
}
#: The columns that count scenarios by depth: the ones a table of another depth has more or fewer of.
_DEPTH_KEYS = {"once", "points", "twice"}


def columns_for(tables: Sequence[Table], depth: int = 2, uncrashed: bool = False, faulted: bool = False,
                ordered: bool = False) -> Columns:
    """The columns of a table that holds rows of `tables`, swept to `depth`: the book's when every row is
    a design's, a loop's when every row is yours, the agent's otherwise; one column per number of crashes,
    and one for the scenarios with none where a fault made some. Under a fault, the scenarios with one
    crash are no longer the crash points of the uninterrupted run, so a table shows them by their name.
    Where a fault explored the schedules of a loop's threads (`ordered`), the first column says how many."""
    table: Table = tables[0] if len(set(tables)) == 1 else "agent"
    columns = COLUMNS[table]
    if faulted and "windows" not in columns:  # the book's columns, in a table that is not the book's
        at = columns.index("distinct") + 1
        columns = (*columns[:at], "windows", *columns[at:])
    first, rest = "once" if faulted else columns[0], [c for c in columns[1:] if c not in _DEPTH_KEYS]
    deeper = [depth_key(k) for k in range(2, depth + 1)]
    return (*(["orders"] if ordered else []), *(["uncrashed"] if uncrashed else []), first, *deeper, *rest)


def cell(row: Row, key: str) -> Any:
    if key.startswith("crashed"):
        return row.crashed(int(key.removeprefix("crashed")))
    return getattr(row, key)


def record_keys(columns: Columns) -> list[str]:
    """The fields of a row as data, the same for every fault and every table of one depth: the crash points,
    the scenarios by number of crashes, their sum, the distinct states, the failure windows, then every count."""
    depths = [key for key in columns if key.startswith("crashed") or key == "twice"]
    return ["variant", "name", "faults", "setting", *(["orders"] if "orders" in columns else []), "points", "once",
            *depths, "uncrashed", "scenarios", "distinct", "windows", *COUNT_KEYS]


def records(rows: Sequence[Row], columns: Columns) -> list[dict[str, Any]]:
    """The rows as data, the same fields for every fault (`record_keys`), and the scenarios by depth."""
    keys = record_keys(columns)
    return [{**{key: cell(row, key) for key in keys}, "by_depth": list(row.by_depth)} for row in rows]


def table(rows: Sequence[Row], columns: Columns) -> str:
    """A pipe table: readable in a terminal, diff-friendly in a golden file."""
    heads = ["variant", *(HEADS[key] for key in columns)]
    body = [[row.name, *(cell(row, key) for key in columns)] for row in rows]
    return grid(body, heads, "github")


#: The loop × profile table's columns (`crashlab sweep --profile`): what an idempotency contract changes.
PROFILE_COLUMNS: Columns = ("scenarios", "with_dups", "dups", "missing", "wrong", "asks", "calls_plus")


@dataclass(frozen=True)
class Failed:
    """A loop × profile row with no counts: the loop could not run under the profile's contract, and why."""

    variant: str
    name: str
    failed: str  # one line


def by_profile(rows: Sequence[tuple[str, Row | Failed]]) -> str:
    """The loop × profile table: a line per loop and profile it was swept under, the loop's lines together; a row
    that failed has blank counts, and a last column says why (there only if one did)."""
    failed = any(isinstance(row, Failed) for _, row in rows)
    heads = ["variant", "profile", *(HEADS[key] for key in PROFILE_COLUMNS), *(["failed"] if failed else [])]
    body = [[row.name, profile, *(cell(row, key) for key in PROFILE_COLUMNS), *([""] if failed else [])]
            if isinstance(row, Row) else [row.name, profile, *(None for _ in PROFILE_COLUMNS), row.failed]
            for profile, row in rows]
    return grid(body, heads, "github")


def profile_records(rows: Sequence[tuple[str, Row | Failed]], columns: Columns) -> list[dict[str, Any]]:
    """The loop × profile rows as data: each row's record (`records`), with the profile it was swept under; a row
    that failed has every count null and says why in `failed`."""
    blank = {key: None for key in record_keys(columns) if key not in ("variant", "name")}
    return [{"variant": row.variant, "name": row.name, "profile": profile,
             **(records([row], columns)[0] if isinstance(row, Row) else {**blank, "by_depth": None,
                                                                          "failed": row.failed})}
            for profile, row in rows]


def grid(body: Sequence[Sequence[Any]], headers: Sequence[str] = (), style: str = "plain") -> str:
    """Rows lined up in columns (tabulate, imported only when a table is printed)."""
    from tabulate import tabulate

    return tabulate(body, headers=list(headers), tablefmt=style)


def to_json(rows: Sequence[Row], columns: Columns) -> str:
    return json.dumps(records(rows, columns), indent=2)


def to_csv(rows: Sequence[Row], columns: Columns) -> str:
    data = records(rows, columns)
    return csv_text([{k: v for k, v in r.items() if k != "by_depth"} for r in data], record_keys(columns))


def csv_text(data: Sequence[dict[str, Any]], fieldnames: Sequence[str]) -> str:
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=fieldnames, lineterminator="\n")
    writer.writeheader()
    writer.writerows(data)
    return out.getvalue()
