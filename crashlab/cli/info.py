"""`crashlab faults`, `crashlab jobs`, `crashlab profiles`, `crashlab schema`: what crashlab can break, what it
can run, and the contracts its service can keep."""

from __future__ import annotations

import json

import click

from crashlab.cli.options import open_job
from crashlab.job import shipped_jobs
from crashlab.profiles import Profile
from crashlab.profiles import registry as profile_registry
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


def kept_for(profile: Profile) -> str:
    """A profile's retention as its provider would say it."""
    hours = profile.retention
    if not profile.honours_keys:
        return "no key honoured"
    if hours is None:
        return "for ever"
    if hours < 1:
        return f"{hours * 60:g} min"
    return f"{hours / 24:g} days" if hours >= 48 and hours % 24 == 0 else f"{hours:g} h"


#: What a retry after a request that failed after its effect gets, in the table's words.
AFTER_FAILURE = {"replay-failure": "the 500 replayed", "run-again": "run again",
                 "replay-effect": "the success replayed"}


def other_payload(profile: Profile) -> str:
    if not profile.honours_keys:
        return "applied"
    if profile.other_payload == "replayed":
        return "the first answer"
    code = profile.code("other-payload")
    return f"{profile.other_payload_status}" + (f" {code}" if code else "")


@click.command()
@click.option("--format", "fmt", type=click.Choice(["table", "json"]), default="table", show_default=True)
def profiles(fmt: str) -> None:
    """The idempotency contracts `crashlab serve --profile NAME` keeps and `crashlab conform` checks, each as its
    provider's page states it.

    Each is a plug-in, found through the entry-point group crashlab.profiles, so an installed package
    can add its own.
    """
    found = list(profile_registry().values())
    if fmt == "json":
        from dataclasses import asdict

        click.echo(json.dumps([asdict(p) for p in found], indent=2))
        return
    rows = [[p.slug, p.provider, kept_for(p), AFTER_FAILURE[p.after_failure] if p.honours_keys else "run again",
             other_payload(p), "yes" if p.key_required else "no", p.source or "(none)"] for p in found]
    click.echo(grid(rows, ["profile", "provider", "retention", "after a 5xx", "other payload", "key required",
                           "source"]))


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
