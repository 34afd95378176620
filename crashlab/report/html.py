"""A sweep's results as one HTML file people open from disk: timelines, windows, stories, provenance.

The file is made from what `sweep --out DIR` wrote, and holds everything it shows: its data as JSON
in the page, its script and styles inline, and a Content-Security-Policy that lets it load nothing
from anywhere, so it opens with no server and no network. It draws windows, not scenarios: a
window's element carries its receipt, and the depth-3 book sweep's 58,695 scenarios are 4,269 of
them. A window's story is its receipt told (each death, what it left the next process, the requests
with their keys, the records each effect came to); `crashlab explain`, whose command it shows, tells
every event.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from importlib import resources
from pathlib import Path
from typing import Any

from crashlab.errors import BadInput

#: What `crashlab report` reads from a results directory.
NEEDED = ("scenarios.jsonl", "receipts.jsonl", "summary.json", "manifest.json")


class ReportError(BadInput):
    """A directory that does not hold a sweep's results this report can draw."""


def read_results(directory: str | Path) -> dict[str, Any]:
    """The page's data: each row of the table with its uninterrupted run's crash points, every receipt, and the
    provenance. The manifest holds no date (a committed results/ stays the same), so the date is its file's."""
    where = Path(directory)
    if not where.is_dir():
        raise ReportError(f"{directory} is not a directory of results (crashlab sweep --out DIR writes one)")
    for name in NEEDED:
        if not (where / name).is_file():
            raise ReportError(f"{directory} has no {name}: sweep again with --out {directory}")
    try:
        rows = json.loads((where / "summary.json").read_text(encoding="utf-8"))
        manifest = json.loads((where / "manifest.json").read_text(encoding="utf-8"))
        receipts = [json.loads(line) for line in (where / "receipts.jsonl").read_text(encoding="utf-8").splitlines()
                    if line.strip()]
        points: dict[str, dict[int, str]] = {}
        with open(where / "scenarios.jsonl", encoding="utf-8") as file:
            for line in file:
                record = json.loads(line)
                if len(record["crashes"]) == 1:  # the uninterrupted run's points, one single-crash scenario each
                    head = record["id"].split(":", 1)[0]
                    points.setdefault(head, {})[record["crashes"][0]] = record["points"][0]
    except (OSError, UnicodeDecodeError, ValueError, KeyError, TypeError, IndexError) as error:
        raise ReportError(f"{directory}: cannot read its results: {error}") from None
    if not isinstance(rows, list) or not isinstance(manifest, dict):
        raise ReportError(f"{directory}: summary.json or manifest.json is not a sweep's")
    date = datetime.fromtimestamp((where / "manifest.json").stat().st_mtime, UTC).strftime("%Y-%m-%d %H:%M UTC")
    tracks = [{"head": head, "points": [crashes[k] for k in sorted(crashes)]} for head, crashes in points.items()]
    return {"rows": rows, "tracks": tracks, "receipts": receipts,
            "provenance": {"crashlab": manifest.get("crashlab", "?"), "command": manifest.get("command", "?"),
                           "job": manifest.get("job", "?"), "job_sha256": manifest.get("job_sha256", "?"),
                           "date": f"{date} (manifest.json written)",
                           "machine": _machine(manifest.get("machine")),
                           "python": manifest.get("python", "?")}}


def render(data: dict[str, Any], beside: str) -> str:
    """The page: the template with the data in it, as JSON no `</script>` inside can end early, and the
    tables beside the timelines (`crashlab.report.sections`) as HTML after them."""
    page = resources.files("crashlab.report").joinpath("report.html").read_text(encoding="utf-8")
    blob = json.dumps(data, separators=(",", ":")).replace("<", "\\u003c")
    return page.replace("/*DATA*/{}", blob, 1).replace("<!--BESIDE-->", beside, 1)


def _machine(said: Any) -> str:
    """The manifest's machine in a line: ``Linux 6.8.0 x86_64, 2 CPUs``."""
    if not isinstance(said, dict):
        return "not recorded (swept before crashlab recorded it)"
    return f"{said.get('system', '?')} {said.get('kernel', '?')} {said.get('arch', '?')}, {said.get('cpus', '?')} CPUs"
