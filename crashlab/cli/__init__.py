"""crashlab's command line: parse, call, print. The work is done elsewhere; a module per command group."""

from __future__ import annotations

import os
import signal
import sys
import traceback
from types import FrameType

import click

from crashlab.cli.campaign import campaign
from crashlab.cli.explain import explain, points
from crashlab.cli.frameworks import frameworks
from crashlab.cli.info import faults, jobs, schema
from crashlab.cli.plot import plot
from crashlab.cli.run import checkpoint, run, tracker
from crashlab.cli.serve import serve
from crashlab.cli.sweep import sweep
from crashlab.errors import BadInput, CrashlabError


@click.group(context_settings={"help_option_names": ["-h", "--help"]}, invoke_without_command=True)
@click.version_option(package_name="crashlab")
@click.pass_context
def cli(ctx: click.Context) -> None:
    """Crash-test an agent's tool-calling loop at every point it can die.

    crashlab runs a scripted job once, records every crash point, then crashes the loop at each one,
    restarts it, and crashes the restart too at each point it reaches. It counts what each loop
    design did twice, lost, asked a person, or paid the model for again.

    \b
    crashlab sweep                      the five designs' table (the book's)
    crashlab sweep --list dups          the scenarios that duplicated, with the command to explain each
    crashlab explain after-reply:6      one scenario's story, process by process
    crashlab points after-reply         the crash points of the uninterrupted run
    crashlab sweep --loop agent         the agent's own loop against every kind of tracker
    crashlab jobs                       the shipped jobs, for --job NAME
    crashlab schema                     the job file's JSON Schema, for editors
    crashlab run JOB --dir DIR          the agent's loop as a real process: kill -9 it, run it again
    crashlab sweep --kill               every process a real one, SIGKILLed at its crash point
    crashlab sweep --loop langgraph --kill   a LangGraph agent (or --loop dbos, a DBOS workflow), killed for real
    crashlab frameworks                 every installed agent runtime: its promise beside what a sweep measured
    crashlab faults                     what else can break: the fault models for sweep --fault
    crashlab serve --dir DIR            the issue tracker as a real HTTP (and MCP) service over SQLite
    """
    if ctx.invoked_subcommand is None:
        click.echo(ctx.get_help())


for command in (sweep, explain, points, faults, jobs, schema, plot, campaign, run, tracker, checkpoint, serve,
                frameworks):
    cli.add_command(command)


def terminate(signum: int, frame: FrameType | None) -> None:
    """SIGTERM (`timeout`, a supervisor) unwinds like Ctrl-C, so every `with` block cleans up.

    A second SIGTERM is ignored while the cleanup runs; SIGKILL still ends the process at once.
    """
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    raise SystemExit(128 + signum)


def on_stdout(error: OSError) -> bool:
    """Whether `error` came from writing the output (stdout on a full disk, /dev/full), not from anything else.

    click.echo holds the stream it writes in its local `file`. A closed pipe (`| head`) never gets
    here: click stops quietly on it, as Python's documentation recommends.
    """
    return any(frame.f_locals.get("file") is sys.stdout for frame, _ in traceback.walk_tb(error.__traceback__))


def main() -> None:
    """Run the CLI so that every error is a single line on stderr, with its class's exit code."""
    previous = signal.signal(signal.SIGTERM, terminate)
    try:
        code = cli.main(standalone_mode=False)
    except click.exceptions.Abort:  # Ctrl-C: the shell's code for a death by SIGINT, as SIGTERM's is above
        click.echo("aborted", err=True)
        code = 128 + signal.SIGINT
    except click.ClickException as error:  # a usage error: exit 2
        click.echo(f"crashlab: error: {' '.join(error.format_message().split())}", err=True)
        code = error.exit_code
    except CrashlabError as error:
        click.echo(f"crashlab: {error.prefix}: {' '.join(str(error).split())}", err=True)
        code = error.exit_code
    except OSError as error:
        if not on_stdout(error):
            raise
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # so the flush at exit has nothing to fail
        click.echo(f"crashlab: error: cannot write the output: {error.strerror or error}", err=True)
        code = BadInput.exit_code
    finally:
        signal.signal(signal.SIGTERM, previous)  # a caller (a test, an embedding program) gets its own back
    sys.exit(code or 0)
