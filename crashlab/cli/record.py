"""`crashlab record`: run a program once against a real model, and write the job and the effects it comes to."""

from __future__ import annotations

from pathlib import Path

import click

from crashlab.cli.options import MAX_TIME_LIMIT, seconds
from crashlab.errors import BadInput

#: The files `--out DIR` writes.
JOB_FILE, EFFECTS_FILE = "job.yaml", "effects.yaml"


@click.command()
@click.option("--upstream", required=True, metavar="URL",
              help="The model provider's base URL (https://api.openai.com/v1, https://api.anthropic.com), which the "
                   "program's requests go on to, its key and all.")
@click.option("--out", metavar="DIR", help=f"Write {JOB_FILE} and {EFFECTS_FILE} into DIR (made if absent).")
@click.option("--job-out", metavar="FILE", help="Write the job here (instead of --out).")
@click.option("--effects-out", metavar="FILE", help="Write the effects here (instead of --out).")
@click.option("--name", default="recorded", show_default=True, metavar="NAME",
              help="The job's name (its run ID is NAME-run-1).")
@click.option("--force", is_flag=True, help="Overwrite files that exist.")
@click.option("--time-limit", type=float, default=600.0, show_default=True, metavar="SECONDS", callback=seconds,
              help=f"Kill the program, with every process it started, after SECONDS (at most {MAX_TIME_LIMIT:g}): a "
                   "run that hangs is refused.")
@click.argument("command", nargs=-1, required=True, type=click.UNPROCESSED, metavar="-- COMMAND...")
def record(upstream: str, out: str | None, job_out: str | None, effects_out: str | None, name: str, force: bool,
           time_limit: float, command: tuple[str, ...]) -> None:
    """Run COMMAND once against a real model through a recording proxy, and write the job and its effects.

    COMMAND runs as each process of a sweep does: in a scratch run directory, standard input closed,
    its tools calling a crashlab service at CRASHLAB_TRACKER_URL, its model's SDK pointed at the
    proxy by OPENAI_BASE_URL and ANTHROPIC_BASE_URL (the proxy passes each request on to --upstream).
    The job holds the model's replies in order (the tools it called, their arguments, its answer);
    the effects, what the run left in the service, by what each is. Sweep them:

    \b
    crashlab record --upstream https://api.openai.com/v1 --out rec -- python agent.py
    crashlab sweep --command 'python agent.py' --job rec/job.yaml --effects rec/effects.yaml
    """
    from crashlab.job.reader import id_problem
    from crashlab.record import record as recorded_from
    from crashlab.record import written

    job_file, effects_file = outputs(out, job_out, effects_out, force)
    if problem := id_problem(name, "--name"):
        raise BadInput(problem)
    recorded = recorded_from(command, upstream, name, time_limit)
    if out is not None:
        Path(out).mkdir(exist_ok=True)
    written(recorded, job_file, effects_file)
    click.echo(f"recorded {recorded.summary}: wrote {job_file} and {effects_file}", err=True)


def outputs(out: str | None, job_out: str | None, effects_out: str | None, force: bool) -> tuple[Path, Path]:
    """Where the job and the effects go, checked before the run: given one way, in a directory that is there, and
    overwriting nothing unless `force` says so."""
    if out is not None and (job_out is not None or effects_out is not None):
        raise BadInput("give --out DIR, or --job-out FILE and --effects-out FILE, not both")
    if out is None and (job_out is None or effects_out is None):
        raise BadInput("say where to write: --out DIR, or --job-out FILE and --effects-out FILE")
    if out is not None:
        folder = Path(out)
        if folder.exists() and not folder.is_dir():
            raise BadInput(f"--out {out}: it is a file, not a directory")
        files = (folder / JOB_FILE, folder / EFFECTS_FILE)
    else:
        assert job_out is not None and effects_out is not None
        files = (Path(job_out), Path(effects_out))
    if files[0].absolute() == files[1].absolute():
        raise BadInput(f"--job-out and --effects-out are both {files[0]}: give each its own file")
    for path in files:
        if path.is_dir():
            raise BadInput(f"cannot write to {path}: it is a directory")
        if not path.absolute().parent.is_dir() and not (out is not None and path.absolute().parent.parent.is_dir()):
            raise BadInput(f"cannot write to {path}: {path.absolute().parent} is not a directory")
        if path.exists() and not force:
            raise BadInput(f"{path} exists: crashlab record overwrites nothing without --force")
    return files
