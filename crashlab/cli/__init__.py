"""crashlab's command line: parse, call, print. The work is done elsewhere; a module per command group."""

from __future__ import annotations

import importlib
import os
import signal
import sys
import traceback
from types import FrameType

import click

from crashlab.errors import BadInput, CrashlabError, OutputGone

#: Every command: the module that holds it, and its help's first sentence. A command's module is imported only
#: when it runs, so `crashlab --help` and `crashlab sweep` import nothing another command needs
#: (`tests/test_cli.py` holds these lines to each command's own help).
COMMANDS: dict[str, tuple[str, str]] = {
    "campaign": ("crashlab.cli.campaign", "Sweep many generated jobs and report every broken promise, with its job "
                 "file and scenario ID."),
    "checkpoint": ("crashlab.cli.run", "Look at a run directory's checkpoint."),
    "conform": ("crashlab.cli.conform", "Probe the idempotency service at URL and say, promise by promise, whether it "
                "keeps the contract of --profile NAME."),
    "explain": ("crashlab.cli.explain", "Tell the story of one SCENARIO, process by process, and its verdict."),
    "faults": ("crashlab.cli.info", "The fault models `crashlab sweep --fault SLUG` takes: what each breaks, what "
               "it adds to the sweep."),
    "frameworks": ("crashlab.cli.frameworks", "Every installed agent runtime, killed for real at every crash point: "
                   "what its documentation promises for an interrupted tool call, quoted, beside what the sweep "
                   "measured."),
    "jobs": ("crashlab.cli.info", "List the jobs that ship with crashlab, for --job NAME: each one's name, calls and "
             "description."),
    "plot": ("crashlab.cli.plot", "Draw the sweep: each variant's single crashes, and its double crashes as a heatmap "
             "(needs crashlab[plot])."),
    "points": ("crashlab.cli.explain", "List the crash points of SLUG's uninterrupted run."),
    "profiles": ("crashlab.cli.info", "The idempotency contracts `crashlab serve --profile NAME` keeps and `crashlab "
                 "conform` checks, each as its provider's page states it."),
    "record": ("crashlab.cli.record", "Run COMMAND once against a real model through a recording proxy, and write "
               "the job and its effects."),
    "report": ("crashlab.cli.report", "Draw the results `crashlab sweep --out DIR` wrote as one HTML file that "
               "opens from disk."),
    "run": ("crashlab.cli.run", "Run JOB with the agent's own loop as a real process, against a SQLite tracker in DIR "
            "(or the running service at --service URL)."),
    "schema": ("crashlab.cli.info", "Print the job file's JSON Schema, for editors and other tools (derived from "
               "crashlab.job.schema); with --receipt, a receipt's."),
    "serve": ("crashlab.cli.serve", "Run the issue tracker as an HTTP service over SQLite in DIR, until Ctrl-C or "
              "SIGTERM."),
    "sweep": ("crashlab.cli.sweep", "Crash the loop at every point, and its restart at every point, and count the "
              "damage."),
    "tracker": ("crashlab.cli.run", "Look at a run directory's tracker."),
}


class Commands(click.Group):
    """A group whose commands are imported when one runs, after click's documented lazy-loading group."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in COMMANDS:
            return None
        command = getattr(importlib.import_module(COMMANDS[cmd_name][0]), cmd_name)
        assert isinstance(command, click.Command), f"{COMMANDS[cmd_name][0]}.{cmd_name} is not a command"
        return command

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """The commands' list as click writes it, from `COMMANDS`: no command's module imported to list it."""
        limit = formatter.width - 6 - max(map(len, COMMANDS))
        rows = [(name, click.Command(name, help=said).get_short_help_str(limit)) for name, (_, said) in
                sorted(COMMANDS.items())]
        with formatter.section("Commands"):
            formatter.write_dl(rows)


@click.group(cls=Commands, context_settings={"help_option_names": ["-h", "--help"]}, invoke_without_command=True)
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
    crashlab report DIR                 a sweep's results (sweep --out DIR) as one HTML page
    crashlab record --upstream URL --out DIR -- python agent.py   your agent's run as a job and its effects
    """
    if ctx.invoked_subcommand is None:
        click.echo(ctx.get_help())


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
        code = cli.main(prog_name="crashlab", standalone_mode=False)
    except click.exceptions.Abort:  # Ctrl-C: the shell's code for a death by SIGINT, as SIGTERM's is above
        click.echo("aborted", err=True)
        code = 128 + signal.SIGINT
    except OutputGone:  # no one reads what it would say: it ends quietly, with its code
        for stream in (sys.stdout, sys.stderr):  # so the flush at exit has nothing to fail
            os.dup2(os.open(os.devnull, os.O_WRONLY), stream.fileno())
        code = OutputGone.exit_code
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
