"""`crashlab faults`, `crashlab jobs`, `crashlab schema`: what crashlab can break, and what it can run."""

from __future__ import annotations

import json

import click

from crashlab.cli.options import open_job
from crashlab.job import shipped_jobs
from crashlab.protocols.fault import registry
from crashlab.report.tables import grid


@click.command()
@click.option("--format", "fmt", type=click.Choice(["table", "json"]), default="table", show_default=True)
def faults(fmt: str) -> None:
    """The fault models `crashlab sweep --fault SLUG` takes: what each breaks, what it adds to the sweep.

    Each is a plug-in, found through the entry-point group crashlab.faults, so an installed package
    can add its own.
    """
    faults = list(registry().values())
    if fmt == "json":
        click.echo(json.dumps([{"slug": f.slug, "breaks": f.breaks, "adds": f.adds,
                                "settings": [{"option": f"--{s.option}", "choices": list(s.choices),
                                              "default": s.default} for s in f.settings]}
                               for f in faults], indent=2))
        return
    width = max(len(f.slug) for f in faults) + 2
    lines = []
    for f in faults:
        lines += [f"{f.slug:<{width}}{f.breaks}", f"{'':<{width}}adds: {f.adds}"]
        for s in f.settings:
            lines.append(f"{'':<{width}}setting: --{s.option} {'|'.join(s.choices)} (default {s.default})")
    click.echo("\n".join(lines))


@click.command()
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
def jobs(fmt: str) -> None:
    """List the jobs that ship with crashlab, for --job NAME: each one's name, calls and description."""
    listed = []
    for name in shipped_jobs():
        job = open_job(name)
        listed.append({"name": name, "calls": len(job.calls), "description": job.description})
    if fmt == "json":
        click.echo(json.dumps(listed, indent=2))
    else:
        click.echo(grid([list(j.values()) for j in listed], ["job", "calls", "description"]))


@click.command()
@click.option("--receipt", is_flag=True, help="The schema of a line of receipts.jsonl (sweep --out DIR) instead.")
def schema(receipt: bool) -> None:
    """Print the job file's JSON Schema, for editors and other tools (derived from crashlab.job.schema); with
    --receipt, a receipt's."""
    if receipt:
        from crashlab.report.receipts import receipt_schema

        click.echo(json.dumps(receipt_schema(), indent=2))
        return
    from crashlab.job.schema import job_schema  # msgspec is needed here only

    click.echo(json.dumps(job_schema(), indent=2))
