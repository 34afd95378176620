"""`crashlab campaign`: many generated jobs, every broken promise with its job file and scenario."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import click

from crashlab.cli.progress import progress
from crashlab.engine.parallel import MAX_WORKERS, default_workers
from crashlab.engine.sweep import MAX_DEPTH
from crashlab.errors import BadInput, CheckFailed


@click.command()
@click.option("--jobs", "count", type=click.IntRange(1, 1_000_000), default=20, show_default=True,
              help="How many generated jobs to sweep.")
@click.option("--seed", type=int, default=0, show_default=True,
              help="Job k of seed S is the same job on every machine.")
@click.option("--depth", type=click.IntRange(1, MAX_DEPTH), default=2, show_default=True,
              help="Crash up to this many processes per scenario.")
@click.option("--workers", type=click.IntRange(1, MAX_WORKERS), default=default_workers, show_default="the cores",
              help="Processes to sweep the jobs on, one job at a time each.")
@click.option("--scheduler", metavar="tcp://HOST:PORT", help="Send the jobs to this running Dask scheduler instead.")
@click.option("--out", default="crashlab-campaign", show_default=True, metavar="DIR",
              help="Where the job file of each job that broke a promise is written (only if one did).")
@click.option("--format", "fmt", type=click.Choice(["table", "json"]), default="table", show_default=True)
def campaign(count: int, seed: int, depth: int, workers: int, scheduler: str | None, out: str, fmt: str) -> None:
    """Sweep many generated jobs and report every broken promise, with its job file and scenario ID.

    Each job (the property tests' generator, seeded by SEED and its number) is swept under every
    variant that makes promises (keys and markers, and the agent's loop against each tracker). A
    scenario breaks a promise if it left a duplicate, lost an effect or saved a wrong result, asked
    the person where the tracker could have answered, or asked an approval other than once. Exit 1
    if any did; each such job is written to DIR as a YAML file, with the command that explains it.
    """
    from crashlab.check.campaign import campaign as run_campaign

    with progress("campaign", "jobs") as shown:
        shown.expect(count)
        verdicts = run_campaign(count, seed, depth, workers, scheduler, lambda v: shown.advance(1))
    failed = [v for v in verdicts if v.broken]
    files = {}
    if failed:
        import yaml

        directory = Path(out)
        try:
            directory.mkdir(parents=True, exist_ok=True)
            for verdict in failed:
                files[verdict.name] = path = directory / f"{verdict.name}.yaml"
                path.write_text(yaml.safe_dump(verdict.spec, sort_keys=False), encoding="utf-8")
        except OSError as error:
            raise BadInput(f"cannot write the failing jobs to {out}: {error.strerror}") from None
    if fmt == "json":
        data = [{"job": v.name, "scenarios": v.scenarios, "broken": v.broken,
                 "file": str(files[v.name]) if v.name in files else None,
                 "violations": [{"scenario": x.scenario, "what": x.what} for x in v.violations]} for v in verdicts]
        click.echo(json.dumps(data, indent=2))
    else:
        scenarios = sum(v.scenarios for v in verdicts)
        click.echo(f"{len(verdicts)} jobs, {scenarios} scenarios to depth {depth}: "
                   f"{sum(v.broken for v in verdicts)} broken promises in {len(failed)} jobs")
        for verdict in failed:
            job = shlex.quote(str(files[verdict.name]))
            for x in verdict.violations:
                how = f"crashlab explain {x.scenario} --job {job}" if ":" in x.scenario else f"job {job}"
                click.echo(f"{x.scenario}  {x.what}  ({how})")
    if failed:
        raise CheckFailed(f"{sum(v.broken for v in verdicts)} broken promises in {len(failed)} jobs")
