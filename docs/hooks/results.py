"""Put the committed results in the docs, so no page copies a figure that `make sweep` can change.

The results live at the top of the checkout, in results/, where `make sweep` writes them, and
mkdocs only reads docs/. Two things bridge the gap:

- `on_files` registers every results/**/*.png as a file of the site at its own path, as if it lay
  under docs/: a page embeds it as ``../results/faults/matrix.png`` (relative to the page), and
  `--strict` checks the link like any other. Nothing is copied into the checkout.
- `on_page_markdown` expands two directives that pymdownx.snippets cannot: one section of a
  markdown results file, chosen by its heading (the fault tables move when a fault is added, so a
  line range would quietly show the wrong one), and a CSV file as a table. Whole files are
  included with snippets (``--8<-- "results/book.txt"``), which checks their paths too.

    <!-- results-section: faults/tables.md power-cut -->
        every ``## `` section whose heading is ``power-cut`` or starts with ``power-cut,``,
        one heading level down, so it sits under the page's own ``##``
    <!-- results-csv: summary.csv name once twice distinct -->
        those columns of every row, headed as `crashlab sweep` heads them

A directive whose file, section or column is missing stops the build: a page never shows less than
it says.
"""

from __future__ import annotations

import csv
import re
from pathlib import Path

from mkdocs.exceptions import PluginError
from mkdocs.structure.files import File

RESULTS = "results"
SECTION = re.compile(r"^<!-- results-section: (\S+) (.+?) -->$", re.MULTILINE)
CSV_TABLE = re.compile(r"^<!-- results-csv: (\S+) (.+?) -->$", re.MULTILINE)
#: A CSV column's head as the sweep prints it, where the key differs.
HEADS = {"name": "variant", "with_dups": "with dups", "calls_plus": "calls+"}


def _root(config) -> Path:
    return Path(config.config_file_path).parent


def on_files(files, config):
    root = _root(config)
    for png in sorted((root / RESULTS).rglob("*.png")):
        files.append(File.generated(config, png.relative_to(root).as_posix(), abs_src_path=str(png)))
    return files


def _read(config, name: str, page) -> str:
    path = _root(config) / RESULTS / name
    if not path.is_file():
        raise PluginError(f"{page.file.src_uri}: {RESULTS}/{name} does not exist")
    return path.read_text(encoding="utf-8")


def _sections(config, name: str, heading: str, page) -> str:
    """Every `## ` section of the file headed `heading` or `heading, SETTING`, one level down."""
    found, keep = [], False
    for line in _read(config, name, page).splitlines():
        if line.startswith("## "):
            title = line[3:].strip()
            keep = title == heading or title.startswith(heading + ",")
        if keep:
            found.append("#" + line if line.startswith("#") else line)
    if not found:
        raise PluginError(f"{page.file.src_uri}: {RESULTS}/{name} has no section headed {heading!r}")
    return "\n".join(found).rstrip() + "\n"


def _csv_table(config, name: str, columns: list[str], page) -> str:
    rows = list(csv.DictReader(_read(config, name, page).splitlines()))
    missing = [c for c in columns if not rows or c not in rows[0]]
    if missing:
        raise PluginError(f"{page.file.src_uri}: {RESULTS}/{name} has no column {missing[0]!r}")
    numeric = [all(r[c].isdigit() for r in rows) for c in columns]
    lines = ["| " + " | ".join(HEADS.get(c, c) for c in columns) + " |",
             "|" + "|".join("---:" if n else "---" for n in numeric) + "|"]
    lines += ["| " + " | ".join(r[c] for c in columns) + " |" for r in rows]
    return "\n".join(lines) + "\n"


def on_page_markdown(markdown: str, page, config, files):
    markdown = SECTION.sub(lambda m: _sections(config, m[1], m[2], page), markdown)
    return CSV_TABLE.sub(lambda m: _csv_table(config, m[1], m[2].split(), page), markdown)
