"""The fault matrix: for each loop and each fault, the worst that any of its scenarios came to.

A row is a variant, a column a fault at one of its settings, and a cell the worst outcome among
the fault's scenarios, in the order the chapter fears them: a run that is stuck, an effect that is
missing, a duplicate, a question to a person; clean if none; and "no scenario" where the fault has
none for that loop (a loop that never asks never hears a wrong answer). Its count is the row's count
of that outcome (stuck scenarios, missing effects, duplicate records, questions), read off the
fault's sweep like every other count. The picture is the same grid, coloured by outcome.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from crashlab.job import Job
from crashlab.report.results import manifest
from crashlab.report.tables import csv_text

#: The outcomes, worst first, each with its colour in the picture (Okabe-Ito, which stays apart
#: under the common colour-vision deficiencies); a cell takes the first its row counts.
OUTCOMES: tuple[tuple[str, str], ...] = (
    ("stuck", "#000000"),
    ("missing", "#E69F00"),
    ("dups", "#D55E00"),
    ("asks", "#CC79A7"),
    ("clean", "#E4E4E4"),
    ("no scenario", "#FFFFFF"),
)


def column(record: Mapping[str, Any]) -> str:
    """A fault sweep's column head: the faults, each with the setting it was swept with if it has one."""
    return str(record["faults"])


def worst(record: Mapping[str, Any]) -> tuple[str, int]:
    """The worst outcome a fault sweep's row counts, and its count."""
    if not record["scenarios"]:
        return "no scenario", 0
    return next(((kind, record[kind]) for kind, _ in OUTCOMES[:-2] if record[kind]), ("clean", 0))


def matrix(records: Sequence[Mapping[str, Any]]) -> tuple[list[str], list[dict[str, Any]]]:
    """The columns, in the order the records first name them, and one row per variant, in order."""
    columns = list(dict.fromkeys(column(r) for r in records))
    rows: dict[str, dict[str, Any]] = {}
    for r in records:
        row = rows.setdefault(r["variant"], {"variant": r["variant"], "name": r["name"]})
        kind, count = worst(r)
        row[column(r)] = {"outcome": kind, "count": count}
    return columns, list(rows.values())


#: What `crashlab sweep --fault all --out DIR` writes: every fault's rows, the tables and the matrix, its picture.
FILES = ("faults.json", "faults.csv", "matrix.json", "tables.md", "matrix.png", "manifest.json")


def write(out: Path, job: Job, records: Sequence[Mapping[str, Any]], columns: Sequence[str],
          rows: Sequence[Mapping[str, Any]], tables: str) -> None:
    out.mkdir(parents=True, exist_ok=True)
    (out / "faults.json").write_text(json.dumps(list(records), indent=2) + "\n", encoding="utf-8")
    flat = [{k: v for k, v in r.items() if k != "by_depth"} for r in records]
    (out / "faults.csv").write_text(csv_text(flat, list(flat[0])), encoding="utf-8")
    (out / "matrix.json").write_text(json.dumps({"columns": list(columns), "rows": list(rows)}, indent=2) + "\n",
                                     encoding="utf-8")
    (out / "tables.md").write_text(tables + "\n", encoding="utf-8")
    draw(columns, rows, out / "matrix.png", f"The worst outcome of each fault: job {job.name}")
    (out / "manifest.json").write_text(json.dumps(manifest(job), indent=2) + "\n", encoding="utf-8")


def text(cell: Mapping[str, Any]) -> str:
    return cell["outcome"] if cell["outcome"] in ("clean", "no scenario") else f"{cell['outcome']} {cell['count']:,}"


def draw(columns: Sequence[str], rows: Sequence[Mapping[str, Any]], out: str | Path, title: str = "") -> Path:
    """The matrix as a PNG: a cell per variant and fault, coloured by its worst outcome and labelled."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.colors import to_rgb
    from matplotlib.figure import Figure
    from matplotlib.patches import Patch

    colours = dict(OUTCOMES)
    fig = Figure(figsize=(2 + 1.45 * len(columns), 1.4 + 0.42 * len(rows)), dpi=100, layout="constrained")
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    ax.imshow([[to_rgb(colours[row[c]["outcome"]]) for c in columns] for row in rows], aspect="auto")
    for y, row in enumerate(rows):
        for x, c in enumerate(columns):
            dark = row[c]["outcome"] in ("stuck", "dups")
            ax.text(x, y, text(row[c]), ha="center", va="center", fontsize=8, color="white" if dark else "black")
    ax.set_xticks(range(len(columns)), [c.replace(" ", "\n") for c in columns], fontsize=8)
    ax.set_yticks(range(len(rows)), [row["name"] for row in rows], fontsize=8)
    ax.xaxis.tick_top()
    ax.tick_params(length=0)
    for edge in ax.spines.values():
        edge.set_visible(False)
    fig.legend(handles=[Patch(color=colour, label=kind) for kind, colour in OUTCOMES], loc="outside lower center",
               ncols=len(OUTCOMES), fontsize=8, frameon=False)
    if title:
        fig.suptitle(title, fontsize=11, fontweight="bold")
    out = Path(out)
    fig.savefig(out, format="png")
    return out
