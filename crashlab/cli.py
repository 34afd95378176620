"""crashlab's command line: parse, call, print. The work is done elsewhere."""

from __future__ import annotations

import sys
from contextlib import ExitStack
from pathlib import Path

import click

from . import report
from .designs import DESIGNS
from .job import Job, JobError, load_job
from .store import STORE_KINDS
from .sweep import file_stores, memory_stores, sweep_variant

DEFAULT_JOB = "scenarios/triage.yaml"


class Failure(click.ClickException):
    """Bad input: one line on stderr and exit code 2, never a traceback."""

    exit_code = 2


def open_job(path: str) -> Job:
    try:
        return load_job(path)
    except JobError as error:
        raise Failure(str(error)) from None


def pick_designs(spec: str) -> list:
    if spec == "all":
        return list(DESIGNS.values())
    picked = []
    for slug in (part.strip() for part in spec.split(",")):
        if slug not in DESIGNS:
            raise Failure(f"unknown variant {slug!r} (valid: all, {', '.join(DESIGNS)})")
        picked.append(DESIGNS[slug])
    return picked


job_option = click.option(
    "--job", "job_path", default=DEFAULT_JOB, show_default=True, metavar="FILE", help="The scripted job (YAML)."
)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="crashlab")
def cli() -> None:
    """Crash-test an agent's tool-calling loop at every point it can die.

    crashlab runs a scripted job once, records every crash point, then crashes the loop at each one,
    restarts it, and crashes the restart too at each point it reaches. It counts what each loop
    design did twice, lost, asked a person, or paid the model for again.
    """


@cli.command()
@job_option
@click.option("--variant", default="all", show_default=True, metavar="all|SLUG[,SLUG...]",
              help=f"Which designs to sweep: {', '.join(DESIGNS)}.")
@click.option("--store", type=click.Choice(STORE_KINDS), default="memory", show_default=True,
              help="Where checkpoints go: in memory, or real files replaced with os.replace.")
@click.option("--format", "fmt", type=click.Choice(["table", "json", "csv"]), default="table", show_default=True)
@click.option("--check", "golden", metavar="GOLDEN", help="Exit 1, naming each cell, if the table differs from GOLDEN.")
def sweep(job_path: str, variant: str, store: str, fmt: str, golden: str | None) -> None:
    """Sweep the designs over every single and double crash, and print the table.

    Columns: once = crash points of the uninterrupted run (one scenario each); twice = scenarios
    that crash the restart too; with dups = scenarios that left a duplicate; dups = duplicate
    records; missing = effects that never happened; asks = questions to a person; calls+ = model
    calls beyond the uninterrupted run's.
    """
    job = open_job(job_path)
    designs = pick_designs(variant)
    if golden is not None:
        try:
            expected = report.read_golden(golden)
        except report.GoldenError as error:
            raise Failure(str(error)) from None
    with ExitStack() as stack:
        stores = stack.enter_context(file_stores()) if store == "files" else memory_stores()
        rows = [sweep_variant(design, job, stores).row() for design in designs]
    click.echo({"table": report.table, "json": report.to_json, "csv": report.to_csv}[fmt](rows).rstrip("\n"))
    if golden is not None:
        differences = report.compare(rows, expected)
        for line in differences:
            click.echo(f"differs: {line}", err=True)
        if differences:
            sys.exit(1)
        click.echo(f"matches {Path(golden)}", err=True)


def main() -> None:
    """Run the CLI so that every usage error, too, is a single line on stderr with exit code 2."""
    try:
        code = cli.main(standalone_mode=False)
    except click.exceptions.Abort:
        click.echo("aborted", err=True)
        code = 1
    except click.ClickException as error:
        click.echo(f"crashlab: error: {error.format_message()}", err=True)
        code = error.exit_code
    sys.exit(code or 0)
