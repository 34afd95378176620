"""`crashlab explain` and `crashlab points`: one scenario's story, and where a loop can die."""

from __future__ import annotations

import json
import shutil
import stat

import click

from crashlab.cli.options import (
    PROGRAMS_ONLY,
    check_handles,
    command_setups,
    fs_points_option,
    job_option,
    open_job,
    repeat_option,
    scheduled_option,
    your_setups,
)
from crashlab.durable.state import OnDisk
from crashlab.errors import BadInput
from crashlab.job import shown
from crashlab.loops import VARIANTS
from crashlab.protocols.scenario import ScenarioError, Setup, check_once
from crashlab.report import story as stories
from crashlab.runners import RunnerSpec
from crashlab.runners.forked import loops_own, shares


@click.command()
@click.argument("scenario")
@job_option
@click.option("--loop", metavar="FILE.py:ENTRY|MODULE:ENTRY",
              help="A loop of yours, as `sweep --loop` took it (with --effects and --tracker as there).")
@click.option("--command", "commands", metavar="[NAME=]COMMAND", multiple=True,
              help="Your agent as a program, as `sweep --command` took it (with --effects as there).")
@click.option("--effects", "effects_file", metavar="FILE", help="Your loop's effects, as `sweep --effects` took them.")
@click.option("--tracker", metavar="MODE", help="Your loop's service's mode, as `sweep --tracker` took it.")
@scheduled_option
@fs_points_option
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
@repeat_option
@click.option("--verbose", is_flag=True,
              help="Tell the scheduler's decisions too, a line each, for a loop whose threads crashlab schedules.")
def explain(scenario: str, job_spec: str, loop: str | None, commands: tuple[str, ...], effects_file: str | None,
            tracker: str | None, scheduled: bool, fs_points: bool, fmt: str, repeat: int, verbose: bool) -> None:
    """Tell the story of one SCENARIO, process by process, and its verdict.

    SCENARIO is SLUG:I (crash the first process at its I-th point) or SLUG:I:J (also crash the
    restart at its J-th point), as `crashlab points` numbers them and `crashlab sweep --list` lists
    them; a scenario swept under faults names them after the slug, and the state each death left
    after its point: SLUG+FAULT=VALUE:I~S:J~T. The ID alone says how to run it again.
    A loop that runs only for real (langgraph-plain:14, dbos-plain:2) is killed for real again, and so
    is a loop of yours: `crashlab explain keyed:3 --loop examples/http_loop.py:keyed --effects
    examples/http_loop.yaml`; for such a loop each process says what it found (its run directory's
    files, each by its size, and the tracker's records), how it ended, and what it made. After the
    verdict, a line of advice where the events show a known mistake (a restart that found its work
    done and did nothing, a client that does not retry, a loop with no crash point of its own). With
    --repeat N it runs the scenario N times, and for a flaky one (its runs differ) tells every
    outcome they came to, with how many came to each.
    """
    if loop is not None and commands:
        raise BadInput(f"--command and --loop {loop} both name the loop to explain: give one")
    if fs_points and not commands:
        raise BadInput(PROGRAMS_ONLY)
    if loop is not None or commands:
        named = click.get_current_context().get_parameter_source("job_spec") is not click.core.ParameterSource.DEFAULT
        setups = command_setups(commands, effects_file, tracker, None, job=open_job(job_spec) if named else None,
                                fs_points=fs_points) \
            if commands else your_setups(loop or "", effects_file, tracker, None, scheduled)
        runs, calls = stories.find_repeats(scenario, setups[0].job, {s.variant.slug: s.variant for s in setups},
                                           repeat)
    elif effects_file is not None or tracker is not None or scheduled:
        raise BadInput("--effects, --tracker and --scheduled belong to a loop of yours: give --loop FILE.py:ENTRY "
                       "or --command COMMAND too")
    else:
        runs, calls = stories.find_repeats(scenario, open_job(job_spec), VARIANTS, repeat)
    told = stories.story(runs[0], calls, runs, verbose)
    click.echo(json.dumps(told, indent=2) if fmt == "json" else stories.render(told))


@click.command()
@click.argument("slug", required=False)
@job_option
@click.option("--command", "commands", metavar="[NAME=]COMMAND", multiple=True,
              help="Your agent as a program, as `sweep --command` took it (with --effects, or --job, as there); "
                   "SLUG, if given, names one of them.")
@click.option("--effects", "effects_file", metavar="FILE", help="Your program's effects, as `sweep --effects` took "
                                                                 "them.")
@fs_points_option
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
def points(slug: str | None, job_spec: str, commands: tuple[str, ...], effects_file: str | None, fs_points: bool,
           fmt: str) -> None:
    """List the crash points of SLUG's uninterrupted run.

    Each point: its index (the I of scenario SLUG:I), its label and which occurrence of that label it
    is, where it falls (turn, call, tool), and what is durable there: the checkpoint on disk (for an
    agent runtime, or your program, the files of its run directory, copied with the process stopped at
    the point; '-' for one that keeps its state on a server) and the tracker's records. A crash at that
    point leaves exactly this for the restart. In text, each line is cut to the terminal's width (…);
    --format json gives every record in full. Your agent as a program: `crashlab points --command
    'python agent.py' --effects effects.yaml`, its file operations too with --fs-points.
    """
    if fs_points and not commands:
        raise BadInput(PROGRAMS_ONLY)
    setup = command_setup(slug, commands, effects_file, job_spec, fs_points) if commands else \
        crashlabs_setup(slug, job_spec, effects_file)
    variant = setup.variant
    with RunnerSpec("in-process" if "in-process" in variant.runners else "forked").open() as runner:
        if variant.keeps_checkpoint:
            rows = stories.point_rows(runner.scenario(setup, ()))
        elif shares(setup):  # a runtime's own files, or a program's: stopped at each point, its run directory copied
            run = runner.life(setup, None, (), (), watch=True)
            kept = [loops_own(left.state.raw()) for (left,), in run.deaths or () if isinstance(left.state, OnDisk)]
            rows = stories.point_rows(run, [stories.files_summary((name, len(data)) for name, mode, data, _ in entries
                                                                  if stat.S_ISREG(mode)) for entries in kept])
        else:  # kept where no copy reaches (a runtime's server), or by a loop of yours
            run = runner.scenario(setup, ())
            rows = stories.point_rows(run, [None] * len(run.points.points(1)))
    if commands:  # a program's run is held to what a sweep holds it to: each effect once, the job's model asked
        check_once(run)
    if fmt == "json":
        click.echo(json.dumps(rows, indent=2))
        return
    click.echo("\n".join(point_lines(rows, shutil.get_terminal_size((120, 24)).columns)))


def crashlabs_setup(slug: str | None, job_spec: str, effects_file: str | None) -> Setup:
    """One of crashlab's variants, `slug`, on the job `job_spec` names."""
    if effects_file is not None:
        raise BadInput("--effects belongs to your agent as a program: give --command COMMAND too")
    if slug is None:
        raise BadInput(f"crashlab points needs SLUG, a variant ({', '.join(VARIANTS)}), or --command COMMAND")
    if slug not in VARIANTS:
        raise ScenarioError(f"unknown variant {shown(slug)} (valid: {', '.join(VARIANTS)})")
    job = open_job(job_spec)
    check_handles(job, [VARIANTS[slug]])
    return Setup(VARIANTS[slug], job)


def command_setup(slug: str | None, commands: tuple[str, ...], effects_file: str | None, job_spec: str,
                  fs_points: bool) -> Setup:
    """Your agent as a program, as `sweep --command` takes it: the one command, or the one `slug` names. Its run
    directory is copied at each point, whatever else it keeps: the files it holds there are what a death leaves."""
    named = click.get_current_context().get_parameter_source("job_spec") is not click.core.ParameterSource.DEFAULT
    setups = {s.variant.slug: s for s in command_setups(commands, effects_file, None, None, state_in_run_dir=True,
                                                        job=open_job(job_spec) if named else None,
                                                        fs_points=fs_points)}
    if slug is None and len(setups) > 1:
        raise BadInput(f"crashlab points lists one program's points: name one as SLUG ({', '.join(setups)})")
    if slug is not None and slug not in setups:
        raise BadInput(f"no --command is named {shown(slug)} (named: {', '.join(setups)})")
    return setups[slug or next(iter(setups))]


def point_lines(rows: list[dict], width: int) -> list[str]:
    """The points as aligned lines, each at most `width` characters.

    Only the short fields (index, point, where) are aligned; what is durable, which grows with the job,
    ends the line and is cut at the width, so the output grows linearly with the points.
    """
    cells = [(str(r["index"]), f"{r['label']} #{r['occurrence']}", r["where"],
              f"{r['checkpoint'] or '-'} | {', '.join(r['tracker']) or '-'}") for r in rows]
    heads = ("#", "point", "where", "on disk | tracker")
    widths = [max(len(c[k]) for c in [heads, *cells]) for k in range(3)]

    def line(c: tuple[str, ...]) -> str:
        text = f"{c[0]:>{widths[0]}}  {c[1]:<{widths[1]}}  {c[2]:<{widths[2]}}  {c[3]}"
        return text if len(text) <= width else text[: max(width - 1, 0)] + "…"

    return [line(heads), *map(line, cells)]
