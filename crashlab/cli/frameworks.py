"""`crashlab frameworks`: every installed agent runtime, its promise for an interrupted tool call, and
what killing it for real measured."""

from __future__ import annotations

import json

import click

from crashlab.cli.options import command_setups, job_option, names, open_job, time_limit_option
from crashlab.cli.progress import progress
from crashlab.engine.parallel import MAX_WORKERS, default_workers
from crashlab.engine.sweep import MAX_DEPTH
from crashlab.engine.tree import Row
from crashlab.errors import BadInput, Flaky
from crashlab.loops import VARIANTS
from crashlab.protocols.fault import Faults
from crashlab.protocols.scenario import Setup
from crashlab.report import frameworks as report
from crashlab.report.results import PendingResults
from crashlab.runners import RunnerSpec
from crashlab.runtimes import SDK, SDKS, Runtime
from crashlab.runtimes import frameworks as every


@click.command()
@job_option
@click.option("--runtime", "chosen", metavar="all|NAME[,NAME...]",
              help=f"Only these runtimes (or SDKs with no runtime: {', '.join(SDKS)}). [default: all, every installed "
                   "one]")
@click.option("--depth", "depths", type=click.IntRange(1, MAX_DEPTH), multiple=True, show_default="1",
              help="Sweep at this depth; give it again for another (--depth 1 --depth 2).")
@click.option("--format", "fmt", type=click.Choice(["table", "json"]), default="table", show_default=True,
              help="A table for people (the promises quoted below it), or JSON for scripts.")
@click.option("--workers", type=click.IntRange(1, MAX_WORKERS), default=default_workers, show_default="the cores",
              help="Processes to spread each sweep over.")
@click.option("--out", metavar="DIR",
              help=f"Also write {' and '.join(report.FILES)} into DIR (checked before the sweeps; written whole at "
                   "the end).")
@time_limit_option
def frameworks(job_spec: str, chosen: str | None, depths: tuple[int, ...], fmt: str, workers: int, out: str | None,
               time_limit: float) -> None:
    """Every installed agent runtime, killed for real at every crash point: what its documentation
    promises for an interrupted tool call, quoted, beside what the sweep measured.

    \b
    Each runtime has a row as its documentation writes the loop (plain), one whose tools send a key
    made of the runtime's own durable IDs (keyed), and one per setting that changes the outcome,
    each swept through crashlab's adapter of the runtime (swept as: adapter). A runtime with an
    agent in examples/agents/ (LangGraph, the OpenAI Agents SDK), written as its docs write one,
    has two rows more, plain and keyed, the agent swept from outside as the program it is, as
    `crashlab sweep --command` sweeps it (swept as: command); so have the SDKs that are no runtime,
    each with its agent (openai-python, openai-node: the openai package in Python and on Node).
    Columns: scenarios swept; dups, missing and asks summed over them; windows (failure windows)
    and distinct (durable states), which do not grow with how densely a loop is marked; flaky.
    A runtime whose extra is not installed, or only partly (a module its loop imports is missing),
    and an agent that cannot run here, are named on stderr, with the command that installs them.
    """
    job, spec = open_job(job_spec), RunnerSpec("forked", "files", time_limit)

    def sweep(runtime: Runtime, depth: int) -> list[Row]:
        from crashlab.engine.sweep import sweep_all

        click.echo(f"sweeping {runtime.title} at depth {depth}", err=True)
        setups = [Setup(VARIANTS[slug], job, Faults.of(())) for slug in runtime.rows]
        if runtime.agent is not None and runtime.name not in stranded:
            # Its agent as `crashlab sweep --command NAME=CMD --job JOB` sweeps it: the same setups, re-executed
            # there too (a program's word that it keeps all in its run directory is not given).
            setups += command_setups(runtime.agent.commands(), None, None, None, job=job)
        # Re-executed, every scenario: each checked to retrace the run it repeats, which a restart from a copy
        # cannot be, so that `flaky` counts what a runtime does differently from one run to the next.
        with progress(f"{runtime.name} at depth {depth}", "scenarios") as shown:
            return [s.row() for s in sweep_all(setups, spec, depth, share=False, workers=workers, strays_fail=False,
                                               advance=shown.advance, expect=shown.expect)]

    pending = PendingResults(out) if out is not None else None  # a bad --out, too, before any runtime is looked for
    try:
        picked, stranded = _installed(None if chosen == "all" else chosen)
        measured = report.measure(picked, depths or (1,), sweep)
        if not measured:
            raise BadInput("no runtime is installed: pip install 'crashlab[frameworks]'")
        if pending is not None:
            pending.put(lambda into: report.write(into, measured), report.FILES)
    finally:
        if pending is not None:
            pending.discard()
    click.echo(json.dumps(report.records(measured), indent=2) if fmt == "json" else report.table(measured))
    if flaky := sum(row.flaky for m in measured for rows in m.rows.values() for row in rows):
        raise Flaky(f"{flaky} flaky scenario{'s' if flaky > 1 else ''}: the table counts the worst each came to "
                    "(crashlab sweep --loop RUNTIME --kill --list flaky names them, or, for a row swept as a command, "
                    "crashlab sweep --command NAME=CMD --job JOB --list flaky)")


def _installed(chosen: str | None) -> tuple[list[Runtime], dict[str, str]]:
    """The runtimes `chosen` names (None: every one) that are installed whole, and those whose own agent cannot run
    here, each with why; what is left out is named on stderr, or refused where `chosen` named it."""
    known = every()
    picked = [known[name] for name in names(chosen, known, "runtime")] if chosen else list(known.values())
    installed = [r for r in picked if r.version() is not None]
    partly = {r.name: why for r in installed if (why := r.unloadable())}
    # A runtime's own agent that cannot run (no langchain-openai beside LangGraph) leaves out its rows alone.
    stranded = {r.name: f"{r.name}'s examples/agents/{r.agent.script} ({why}: {r.agent.install})"
                for r in installed if r.name not in partly and not isinstance(r, SDK) and r.agent is not None
                and (why := r.agent.missing())}
    for kind, listed in (("not installed", [f"{r.name} ({r.install})" for r in picked if r not in installed]),
                         ("partly installed", [f"{name} ({why}: {known[name].install})"
                                               for name, why in partly.items()]),
                         ("agent cannot run", list(stranded.values()))):
        if listed and chosen:
            raise BadInput(f"{kind}: {', '.join(listed)}")
        if listed:
            click.echo(f"{kind}, left out: {', '.join(listed)}", err=True)
    return [r for r in installed if r.name not in partly], stranded
