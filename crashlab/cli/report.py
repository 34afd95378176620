"""`crashlab report`: a sweep's results as one HTML file, for the people who act on them."""

from __future__ import annotations

from pathlib import Path

import click

from crashlab.errors import BadInput
from crashlab.report.html import read_results, render
from crashlab.report.sections import beside


@click.command()
@click.argument("directory", metavar="DIR")
@click.option("--faults", metavar="DIR", help="The fault matrix `crashlab sweep --fault all --out DIR` wrote.  "
                                              "[default: DIR/faults, if it holds one]")
@click.option("--frameworks", metavar="DIR", help="The runtimes' table `crashlab frameworks --out DIR` wrote.  "
                                                  "[default: DIR/frameworks, if it holds one]")
@click.option("--out", "out", metavar="FILE", help="Where to write the page.  [default: DIR/report.html]")
def report(directory: str, faults: str | None, frameworks: str | None, out: str | None) -> None:
    """Draw the results `crashlab sweep --out DIR` wrote as one HTML file that opens from disk.

    Per variant, the crash points of the uninterrupted run on a timeline, and on it every window that
    failed or asked a person, coloured by what it did (duplicate, missing, asked, wrong, flaky, stuck,
    stray); a click on a window tells its story (each death, what it left, the requests with their
    keys, the records each effect came to) and the command that replays it. Below them, the fault
    matrix (the worst each fault came to, per variant) and the runtimes' table (each runtime's promise
    quoted, then what killing it measured, and its own fault matrix if one is beside it), or a line
    saying they were not swept. Filters by variant, fault and outcome, which reach the tables too, a
    search box for a scenario ID, and the provenance from manifest.json. The page loads nothing from
    anywhere: its data, script and styles are in it.
    """
    tables = beside(directory, faults, frameworks)
    data = read_results(directory)
    target = Path(out) if out is not None else Path(directory) / "report.html"
    try:
        target.write_text(render(data, tables.html()), encoding="utf-8")
    except OSError as error:
        raise BadInput(f"cannot write the report to {target}: {error.strerror}") from None
    size = target.stat().st_size / 1e6
    click.echo(f"wrote {target} ({len(data['receipts']):,} windows, {tables.said()}, {size:.1f} MB)", err=True)
