"""`crashlab run`, `crashlab tracker show`, `crashlab checkpoint show`: the agent's loop as a real program."""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import click

from crashlab import program
from crashlab.cli.options import open_job
from crashlab.errors import OutputGone
from crashlab.job import Call
from crashlab.report.story import describe
from crashlab.report.tables import grid
from crashlab.world import TRACKER_MODES, Record
from crashlab.world.remote import TOKEN_VARIABLE
from crashlab.world.sqlite import SqlitePerson

#: The longest `--pace`, in seconds: an hour at each crash point is ample time to aim a kill by hand.
MAX_PACE = 3600.0

T = TypeVar("T")


def say(line: str) -> None:
    click.echo(line, err=True)


def first_line(text: str) -> str:
    """A record's text as one line: its first (a comment's body may be empty, and have none)."""
    return text.splitlines()[0] if text else ""


def answered(question: Callable[[], T]) -> T:
    """The person's answer at the terminal; input that ended before it is one line, not a bare "aborted".

    The run stops where it is, its checkpoint whole, and asks again when it is run again.
    """
    try:
        return question()
    except click.Abort as abort:
        if isinstance(abort.__context__, EOFError):  # click turns both EOF and Ctrl-C into Abort
            click.echo(err=True)  # end the question's line
            raise program.RunError("no answer: the input ended before the person answered; run again at a "
                                   "terminal, or with --person auto, yes or no") from None
        raise


def run_directory(ctx: click.Context, param: click.Parameter, value: str) -> Path:
    """DIR as given, never empty: an empty path would be the current directory, which no one means."""
    if not value:
        raise click.BadParameter("must not be empty (for the current directory, say '.')", ctx, param)
    return Path(value)


def pace_seconds(ctx: click.Context, param: click.Parameter, value: float) -> float:
    """--pace, a finite number of seconds from 0 to MAX_PACE: a sleep of inf or 1e308 overflows or never ends."""
    if not (math.isfinite(value) and 0 <= value <= MAX_PACE):
        raise click.BadParameter(f"{value} is not a number of seconds from 0 to {MAX_PACE:g}", ctx, param)
    return value


class TerminalPerson(SqlitePerson):
    """Asks the human at the terminal, showing what the tracker holds for the call in question."""

    def answer(self, call: Call, made: list[Record]) -> int | None:
        say(f"{call.id} has an attempt marker and no result: only you can say whether it happened.")
        say(f"The tracker holds for call {call.id}:")
        for record in made:
            say(f"  {describe(record)}  key {record.key or '-'}  {first_line(record.text)!r}")
        if not made:
            say("  nothing")
        choices = [str(r.number) for r in made] + ["no"]
        question = f"Did call {call.id} ({call.tool}) reach the tracker?"
        reply = answered(lambda: click.prompt(f"{question} Its number, or no", type=click.Choice(choices),
                                              default=choices[0], err=True))
        return None if reply == "no" else int(reply)

    def decide(self, call: Call) -> bool:
        args = ", ".join(f"{name}={value!r}" for name, value in call.args.items())
        return answered(lambda: click.confirm(f"Approve call {call.id}: {call.tool}({args})?", default=None, err=True))


#: `--person`: who answers the loop's questions.
PERSONS = {"ask": TerminalPerson, **program.PERSONS}


@click.command("run")
@click.argument("job_path", metavar="JOB")
@click.option("--dir", "directory", required=True, callback=run_directory, metavar="DIR",
              help="The run directory: tracker.sqlite, checkpoint.json and lock. Made if absent; its parent must "
                   "exist.")
@click.option("--tracker", "tracker_mode", type=click.Choice(TRACKER_MODES),
              help="What the tracker does with keys. Default: the directory's own, keyed for a new one; "
                   "a directory is never resumed under another.")
@click.option("--person", type=click.Choice(list(PERSONS)), default="ask", show_default=True,
              help="Who answers: ask (on the terminal, showing the tracker's records); auto or yes (from the "
                   "tracker's records, approving every gated call); no (refuses every gated call, denies every call).")
@click.option("--crash-at", "kill_at", type=click.IntRange(min=1), metavar="N",
              help="SIGKILL this process at its N-th crash point (numbered as the sweep numbers them).")
@click.option("--pace", type=float, default=0.0, callback=pace_seconds, metavar="SECONDS",
              help=f"Sleep SECONDS (at most {MAX_PACE:g}) at every crash point, to leave time to kill it by hand.")
@click.option("--service", metavar="URL",
              help="The tracker is this running `crashlab serve` (the same for every run of DIR), not DIR's own: "
                   "DIR keeps the checkpoint and the person's and model's counts. Its tracker mode is the run's.")
@click.option("--service-token", envvar=TOKEN_VARIABLE, show_envvar=True, metavar="TOKEN",
              help="The token `crashlab serve` printed as it started, which its controls need: a run reads the "
                   "service's records through them. Best given in the environment, where ps does not show it.")
def run(job_path: str, directory: Path, tracker_mode: str | None, person: str, kill_at: int | None,
        pace: float, service: str | None, service_token: str | None) -> None:
    """Run JOB with the agent's own loop as a real process, against a SQLite tracker in DIR (or the running
    service at --service URL).

    Kill it at any moment (Ctrl-C, kill -9) and run the same command again: it resumes from
    DIR/checkpoint.json and finishes with no duplicate and nothing lost under the keyed or lookup
    tracker (under keyless it asks the person). Each crash point is printed to stderr as it passes.
    Run again after it finished, it says so and changes nothing. Only one run at a time may use DIR.

    \b
    crashlab run triage --dir run1 --pace 0.5     then kill -9 it, and run it again
    crashlab tracker show run1                                   what the tracker holds
    crashlab checkpoint show run1                                what the checkpoint holds
    crashlab serve --dir svc &   then   crashlab run triage --dir run2 --service URL
                                 with CRASHLAB_SERVICE_TOKEN set to the token it printed
    """
    job = open_job(job_path)
    try:
        finished = program.run(job, directory, tracker_mode, PERSONS[person], kill_at, pace,  # type: ignore[arg-type]
                               say, service, service_token)
        held = ", ".join(describe(r) for r in finished.records) or "nothing"
        if finished.already:
            click.echo(f"{directory}: already finished, nothing to do. The tracker holds {held}.")
        else:
            click.echo(f"finished: {finished.checkpoint.answer}")
            click.echo(f"the tracker holds {held}")
    except BrokenPipeError:  # stdout's reader, or stderr's as a point is echoed (in the loop: `program.live`)
        raise OutputGone(f"{directory}: its output's reader went away") from None


@click.group("tracker")
def tracker() -> None:
    """Look at a run directory's tracker."""


@tracker.command("show")
@click.argument("directory", metavar="DIR", callback=run_directory)
@click.option("--format", "fmt", type=click.Choice(["table", "json"]), default="table", show_default=True)
def tracker_show(directory: Path, fmt: str) -> None:
    """List DIR's tracker records in the order they were made, marking a call's duplicates.

    A duplicate is a second record made by the same script call: the work was done twice.
    """
    rows = program.tracker_rows(directory)
    if fmt == "json":
        click.echo(json.dumps(rows, indent=2))
        return
    body = [[r["kind"], r["number"], r["call"], r["key"] or "-", r["issue"] or "",
             first_line(r["text"]), "DUPLICATE" if r["duplicate"] else ""] for r in rows]
    click.echo(grid(body, ["kind", "#", "call", "key", "on", "text", "dup"], "simple") if rows else "no records")


@click.group("checkpoint")
def checkpoint() -> None:
    """Look at a run directory's checkpoint."""


@checkpoint.command("show")
@click.argument("directory", metavar="DIR", callback=run_directory)
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
def checkpoint_show(directory: Path, fmt: str) -> None:
    """Print DIR's checkpoint: in the short form explain uses, or its JSON.

    \b
    T1 closed A=1 B=2 · T2 open S=[1] C:marker
    turn 1 closed with results for A and B; turn 2 open, S's result saved, C's attempt marker with no result
    """
    saved = program.read_checkpoint(directory)
    click.echo(json.dumps(json.loads(saved.to_json()), indent=2) if fmt == "json" else saved.summary())
