"""What several commands take: the job, the variants (one vocabulary for all), the faults and their settings."""

from __future__ import annotations

from collections.abc import Callable
from functools import cache
from typing import Any, cast

import click

from crashlab.durable.store import StoreKind
from crashlab.errors import BadInput
from crashlab.job import Job, find_job, shown
from crashlab.loops import FAMILIES, VARIANTS, yours
from crashlab.profiles import registry as profile_registry
from crashlab.protocols.fault import Faults, registry
from crashlab.protocols.runner import TIME_LIMIT
from crashlab.protocols.scenario import Setup
from crashlab.protocols.variant import Variant
from crashlab.runners import RunnerSpec
from crashlab.world import TRACKER_MODES
from crashlab.world.effects import of_job

DEFAULT_JOB = "triage"
FORMATS = ("table", "json", "csv")

Decorator = Callable[[Callable[..., Any]], Callable[..., Any]]


def open_job(spec: str) -> Job:
    """The job `--job` names: a shipped job by name, or a file by path."""
    return find_job(spec)


job_option = click.option(
    "--job", "job_spec", default=DEFAULT_JOB, show_default=True, metavar="NAME|FILE",
    help="The scripted job: a shipped job's name (see `crashlab jobs`) or a YAML file. A value that is an "
         "existing file, holds a '/' or ends in .yaml is a path.",
)


def names(spec: str, valid: dict, what: str) -> list[str]:
    """A comma-separated list of names from `valid`, each named once."""
    chosen = [name.strip() for name in spec.split(",")]
    for k, name in enumerate(chosen):
        if name not in valid:
            raise BadInput(f"unknown {what} {shown(name)} (valid: all, {', '.join(valid)})")
        if name in chosen[:k]:
            raise BadInput(f"{what} {name!r} is named twice in {shown(spec)}")
    return chosen


def variant_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """--loop, --variant and --tracker: one vocabulary of variants, shared by every command that sweeps."""
    command = click.option(
        "--tracker", metavar="all|MODE[,MODE...]",
        help=f"Short for --variant agent-MODE: the agent's loop against trackers {', '.join(TRACKER_MODES)}.",
    )(command)
    command = click.option(
        "--variant", metavar="all|SLUG[,SLUG...]",
        help=f"Which variants, each named once: {', '.join(VARIANTS)}. [default: all of --loop]",
    )(command)
    command = click.option(
        "--effects", "effects_file", metavar="FILE",
        help="For a loop of yours: a YAML file of the effects it means to have, once each, by what they are "
             "(A: {issue: TITLE}, C: {comment: A}).",
    )(command)
    command = scheduled_option(command)
    command = click.option(
        "--command", "commands", metavar="[NAME=]COMMAND", multiple=True,
        help="Your agent as it runs, a program in any language (python agent.py, node agent.mjs), whose tools call "
             "crashlab's service at CRASHLAB_TRACKER_URL (with --effects): each process is the command, started "
             "afresh in a run directory of its own and killed for real, seen only from outside. Give it again for "
             "another row; NAME= names the row (else the script's name).",
    )(command)
    return click.option(
        "--loop", metavar="|".join(FAMILIES) + "|FILE.py:ENTRY|MODULE:ENTRY",
        help="Whose variants 'all' means: the chapter's five designs, crashlab's own agent loop, or the job "
             "written for an agent runtime (these run only killed for real, --kill; `crashlab frameworks` lists "
             "them). Or a loop of yours, FILE.py:ENTRY or MODULE:ENTRY, whose tools call crashlab's service (with "
             "--effects), every process killed for real. [default: designs]",
    )(command)


#: `--scheduled`: a loop of yours runs its tool calls on threads, which the harness is to schedule.
scheduled_option = click.option(
    "--scheduled", is_flag=True,
    help="For a loop of yours that runs tool calls at once, on a ThreadPoolExecutor or with asyncio.to_thread: "
         "the harness runs its threads one at a time, at its crash points, so that each run repeats itself; "
         "--fault interleave then sweeps other orders.")


#: Why `--fs-points` is refused without `--command`.
PROGRAMS_ONLY = ("--fs-points finds the crash points of a program (--command) in its file operations: a loop of yours "
                 "marks its own with crashlab.point(label)")
fs_points_option = click.option(
    "--fs-points", is_flag=True,
    help="For your agent as a program (--command): its file operations in its run directory are crash points too, "
         "each held while it is killed there: every fsync, fdatasync, rename, unlink and close after a write, named "
         "by what it is and its path (fsync:progress.tmp#2). Runs the run directory on a FUSE layer (fusermount3): "
         "refused where there is none.")


def your_setups(loop: str, effects_file: str | None, tracker: str | None, variant: str | None,
                scheduled: bool = False, state_in_run_dir: bool = False) -> list[Setup]:
    """`--loop FILE.py:ENTRY --effects FILE`: your loop against the service, the tracker mode `--tracker` names."""
    if effects_file is None:
        raise BadInput(f"--loop {loop} needs --effects FILE: what it means to do once each, by what it is "
                       "(A: {issue: TITLE}, C: {comment: A})")
    if variant is not None:
        raise BadInput(f"--variant names crashlab's variants; --loop {loop} names your entry points (drop --variant)")
    if tracker is not None and tracker not in TRACKER_MODES:
        raise BadInput(f"--tracker for a loop of yours is the service's one mode: {shown(tracker)} is none of "
                       f"{', '.join(TRACKER_MODES)}")
    job, entries = yours.load(loop)
    effects = yours.read_effects(effects_file)
    return [yours.setup(entry, effects, name=slug, tracker=tracker or "keyed", job=job, scheduled=scheduled,
                        state_in_run_dir=state_in_run_dir) for slug, entry in entries]


def command_setups(commands: tuple[str, ...], effects_file: str | None, tracker: str | None, variant: str | None,
                   state_in_run_dir: bool = False, job: Job | None = None, fs_points: bool = False) -> list[Setup]:
    """`--command CMD --effects FILE`: your agent as a program, a row for each command; with `job` (`--job`), the
    job whose model crashlab serves it at OPENAI_BASE_URL and ANTHROPIC_BASE_URL, whose changing calls are its
    effects unless --effects says otherwise. With `fs_points` (`--fs-points`), its file operations in its run
    directory are crash points too, on a FUSE layer: refused in one line where FUSE is not usable."""
    if fs_points:
        from crashlab.durable.fuse import unusable

        if unable := unusable():
            raise BadInput(f"--fs-points runs the program's run directory on a FUSE layer, and here {unable}")
    if effects_file is None and job is None:
        raise BadInput("--command needs --effects FILE (what your agent means to do once each, by what it is: "
                       "A: {issue: TITLE}, C: {comment: A}), or --job JOB, whose model crashlab then serves it")
    if variant is not None:
        raise BadInput("--variant names crashlab's variants; --command names your program (drop --variant)")
    if tracker is not None and tracker not in TRACKER_MODES:
        raise BadInput(f"--tracker for your agent is the service's one mode: {shown(tracker)} is none of "
                       f"{', '.join(TRACKER_MODES)}")
    programs = [yours.program(command) for command in commands]
    for k, (name, _) in enumerate(programs):
        if name in [n for n, _ in programs[:k]]:
            raise BadInput(f"two --command rows are named {name!r}: name them, as --command plain='python agent.py' "
                           "--command keyed='python agent.py --keyed'")
    if effects_file is None and job is not None and not job.changing_calls:
        own = f" (its tools {', '.join(job.own_tools)} are your program's own)" if job.own_tools else ""
        raise BadInput(f"{job.source} files no issue and makes no comment{own}: say what your agent means to do once "
                       "each with --effects FILE (crashlab record writes one)")
    effects = yours.read_effects(effects_file) if effects_file is not None else of_job(job) if job else ()
    return [yours.setup(entry, effects, name=name, tracker=tracker or "keyed", job=job or programs[0][0],
                        state_in_run_dir=state_in_run_dir, fs_points=fs_points) for name, entry in programs]


def choose(job_spec: str, loop: str | None, variant: str | None, tracker: str | None, effects_file: str | None,
           scheduled: bool = False, state_in_run_dir: bool = False,
           commands: tuple[str, ...] = (), fs_points: bool = False) -> tuple[Job, list[Variant]]:
    """The job and the variants a command runs: crashlab's, as `choose_variants` picks them, or yours (a loop of
    yours, or your agent as a program)."""
    if fs_points and not commands:
        raise BadInput(PROGRAMS_ONLY)
    if commands:
        if loop is not None:
            raise BadInput(f"--command and --loop {loop} both name the loop to sweep: give one")
        if scheduled:
            raise BadInput("--scheduled schedules the threads of a loop crashlab runs in Python; a program's threads "
                           "are its own (drop --scheduled)")
        named = click.get_current_context().get_parameter_source("job_spec") is not click.core.ParameterSource.DEFAULT
        setups = command_setups(commands, effects_file, tracker, variant, state_in_run_dir,
                                open_job(job_spec) if named else None, fs_points)
        return setups[0].job, [s.variant for s in setups]
    if loop is not None and yours.is_yours(loop):
        if click.get_current_context().get_parameter_source("job_spec") is not click.core.ParameterSource.DEFAULT:
            raise BadInput(f"--loop {loop} is its own script: --job gives crashlab's loops theirs (drop --job)")
        setups = your_setups(loop, effects_file, tracker, variant, scheduled, state_in_run_dir)
        return setups[0].job, [s.variant for s in setups]
    if effects_file is not None:
        raise BadInput("--effects belongs to a loop of yours (--loop FILE.py:ENTRY); crashlab's loops take their "
                       "effects from the job")
    if state_in_run_dir:
        raise BadInput("--state-in-run-dir is the word of a loop of yours (--loop FILE.py:ENTRY); crashlab's loops "
                       "and the runtimes restart from copies where their tests showed they may")
    if scheduled:
        already = ", ".join(slug for slug, v in VARIANTS.items() if v.scheduled)
        raise BadInput("--scheduled belongs to a loop of yours (--loop FILE.py:ENTRY); crashlab's rows that run "
                       f"calls at once are scheduled already ({already})")
    variants = choose_variants(loop, variant, tracker)
    job = open_job(job_spec)
    check_handles(job, variants)
    return job, variants


def runner_for(variants: list[Variant], kill: bool, store: str | None, limit: float = TIME_LIMIT) -> RunnerSpec:
    """In process, unless `--kill` asks for real deaths or the loop is yours (which calls a real service)."""
    if kill and store == "memory":
        raise BadInput("--kill needs --store files: a memory store cannot outlive a real death")
    forked = kill or any(v.service for v in variants)
    return RunnerSpec("forked" if forked else "in-process", cast(StoreKind, store or ("files" if forked else "memory")),
                      limit)


def seconds(ctx: click.Context, param: click.Parameter, value: float) -> float:
    if not 0.1 <= value <= MAX_TIME_LIMIT:  # also refuses nan, which every comparison fails
        raise click.BadParameter(f"{value} is not a number of seconds from 0.1 to {MAX_TIME_LIMIT:g}")
    return value


#: The longest `--time-limit`: a day.
MAX_TIME_LIMIT = 86400.0
time_limit_option = click.option(
    "--time-limit", "time_limit", type=float, default=TIME_LIMIT, show_default=True, metavar="SECONDS",
    callback=seconds,
    help="Kill a process that runs for real (--kill, a loop of yours, a framework) after SECONDS, with every "
         "process it started: a restart that hangs is stuck, a first run that hangs fails the sweep.")

#: `--repeat`: runs of each scenario; more than this is a typo, not a search for a race.
MAX_REPEAT = 100

repeat_option = click.option(
    "--repeat", type=click.IntRange(1, MAX_REPEAT), default=1, show_default=True, metavar="N",
    help="Run every scenario N times (re-executed from nothing): a scenario whose runs differ, in what they came "
         "to or in the points and requests on the way, is flaky. One run of a loop with a race is one throw of "
         "its dice.")


def check_loop(loop: str | None) -> None:
    if loop is not None and loop not in FAMILIES and not yours.is_yours(loop):
        raise BadInput(f"unknown loop {shown(loop)} (valid: {', '.join(FAMILIES)}, or a loop of yours as "
                       "FILE.py:ENTRY or MODULE:ENTRY)")


def choose_variants(loop: str | None, variant: str | None, tracker: str | None) -> list[Variant]:
    """The variants a command runs: one vocabulary, the registry's slugs, whatever the options say.

    `--variant` names variants of any loop; `--loop` (designs by default) says whose variants `all`
    means, and `--tracker MODE` is shorthand for `--variant agent-MODE`. Combinations that contradict
    each other are refused rather than one of them ignored.
    """
    check_loop(loop)
    if variant is not None and tracker is not None:
        raise BadInput("give --variant or --tracker, not both (--tracker MODE is short for --variant agent-MODE)")
    if tracker is not None:
        if loop not in (None, "agent"):
            raise BadInput(f"--tracker chooses the agent loop's trackers; --loop {loop} has none (drop --loop {loop})")
        modes = list(TRACKER_MODES) if tracker == "all" else names(tracker, dict.fromkeys(TRACKER_MODES), "tracker")
        return [VARIANTS[f"agent-{mode}"] for mode in modes]
    family = FAMILIES[loop or "designs"]
    if variant is None or variant == "all":
        return [v for v in family.values() if v.in_all]
    chosen = [VARIANTS[slug] for slug in names(variant, VARIANTS, "variant")]
    if loop is not None:
        strangers = [v.slug for v in chosen if v.slug not in family]
        if strangers:
            raise BadInput(f"--loop {loop} has no variant {strangers[0]!r} (its variants: {', '.join(family)})")
    return chosen


def check_handles(job: Job, variants: list[Variant]) -> None:
    for variant in variants:
        if reason := variant.cannot_run(job):
            raise BadInput(reason)


class FaultsHere(click.Option):
    """Where `Faulted` puts --fault and every installed fault's setting among a command's options."""


#: --fault, as often as faults are to be composed, and each installed fault's setting as an option of its own: for a
#: `Faulted` command, which finds them only where its command line may name one.
fault_options = click.option("--faults-here", cls=FaultsHere, hidden=True, expose_value=False)


@cache
def fault_params() -> list[click.Parameter]:
    """--fault and each installed fault's setting, as options: the fault registry, found when first asked for."""
    settings = [click.Option([f"--{setting.option}"], type=click.Choice(setting.choices), default=None,
                             show_default=setting.default, help=setting.help)
                for fault in registry().values() for setting in fault.settings]
    return [click.Option(
        ["--fault", "fault_slugs"], type=click.Choice([*registry(), "all"]), multiple=True,
        help="What breaks, beyond the loop's process (see `crashlab faults`); give it again to compose faults in "
             "one sweep. all sweeps each fault at each of its settings and ends with the matrix of worst "
             "outcomes. [default: crash]",
    ), *settings]


class Faulted(click.Command):
    """A command that takes --fault and the faults' settings, found only where its command line may name one.

    Finding them reads every installed package's entry points and imports every fault module, about 60 ms
    here (a fault is a plug-in, and a plug-in may add a setting): a sweep under the crash alone, the book's,
    needs none of it. Where the arguments hold no option but the command's own, the faults stay unread;
    anywhere else (an option it does not know, --help, the reference's pages) they are read.
    """

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        ctx.meta[FAULTS_NAMED] = names_another_option(args, super().get_params(ctx))
        rest = super().parse_args(ctx, args)
        ctx.params.setdefault("fault_slugs", ())  # no --fault: the crash alone
        return rest

    def get_params(self, ctx: click.Context) -> list[click.Parameter]:
        params = super().get_params(ctx)
        here = next(k for k, param in enumerate(params) if isinstance(param, FaultsHere))
        found = fault_params() if ctx.meta.get(FAULTS_NAMED, True) else []
        return [*params[:here], *found, *params[here + 1:]]


#: The context's note of whether a command line may name a fault or a fault's setting.
FAULTS_NAMED = "crashlab.faults-named"


def names_another_option(args: list[str], params: list[click.Parameter]) -> bool:
    """Whether `args` hold an option none of `params` is (a fault's, or one misspelt), or ask for help."""
    known = {opt.split("=")[0] for param in params for opt in (*param.opts, *param.secondary_opts)}
    for arg in args:
        if arg == "--":
            return False
        if arg.startswith("-") and arg.split("=")[0] not in known - {"--help", "-h"}:
            return True
    return False


def faults_of(slugs: tuple[str, ...], settings: dict[str, str | None]) -> Faults:
    """The faults `--fault` names, at the settings their options give; a setting without its fault is refused."""
    if not slugs and not any(settings.values()):
        return Faults()
    for k, slug in enumerate(slugs):
        if slug in slugs[:k]:
            raise BadInput(f"--fault {slug} is named twice")
    chosen = [registry()[slug] for slug in slugs]
    for fault in registry().values():
        for setting in fault.settings:
            if settings.get(setting.option) is not None and fault not in chosen:
                raise BadInput(f"--{setting.option} is the {fault.slug} fault's setting: it needs --fault {fault.slug}")
    return Faults.of(f.with_options(settings) for f in chosen)



profile_option = click.option(
    "--profile", "profile_name", metavar="NAME[,NAME...]|all", default=None,
    help="Sweep against a tracker that keeps this provider's idempotency contract (retention, a retry after a "
         "failure, another payload under a key, a required key; docs: idempotency contracts), or each in turn (a "
         "list, or all), and print one table, loop × profile.")


def profiles_of(spec: str) -> list[str]:
    """The profiles `--profile` names: by slug, comma-separated, or every one installed (``all``), the default
    first."""
    return list(profile_registry()) if spec == "all" else names(spec, profile_registry(), "profile")
