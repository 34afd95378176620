"""crashlab's command line: parse, call, print. The work is done elsewhere."""

from __future__ import annotations

import importlib
import json
import shlex
import shutil
import signal
import sys
import time
from collections.abc import Iterable, Iterator
from pathlib import Path

import click

from crashlab.durable.disk import SYNCS
from crashlab.durable.store import STORE_KINDS
from crashlab.engine.parallel import default_workers
from crashlab.engine.points import HarnessError
from crashlab.engine.sweep import (
    AGENTS,
    VARIANTS,
    ScenarioResult,
    Variant,
    VariantSweep,
    memory_stores,
    run_scenario,
    sweep_variant,
)
from crashlab.faults import EVERY_SETTING, FAULTS, SETTING_OF, sweep_fault
from crashlab.job import Job, JobError, find_job, shipped_jobs, shown
from crashlab.loops.designs import BEYOND_THE_BOOK, DESIGNS
from crashlab.report import matrix
from crashlab.report import story as explaining
from crashlab.report import tables as report
from crashlab.runners import program as running
from crashlab.world import COMMITS, DRIFTS, TRACKER_MODES

DEFAULT_JOB = "triage"
#: `sweep --depth`: deeper than this, the scenarios of even a small job outnumber what a machine can run.
MAX_DEPTH = 8
#: `sweep --workers`: more processes than this is a typo, not a machine.
MAX_WORKERS = 1024
#: `--loop`: the loops crashlab sweeps, each with its variants (every slug is a key of VARIANTS).
#: Each loop's variants; `--variant all` is the book's five of the designs, not those beyond the book.
LOOPS: dict[str, dict[str, Variant]] = {"designs": {**DESIGNS, **BEYOND_THE_BOOK}, "agent": AGENTS}
#: Loops on a framework (an extra each), swept through `crashlab.api` by `crashlab sweep --kill` only.
FRAMEWORKS = {"langgraph": "crashlab[langgraph]", "dbos": "crashlab[dbos]"}
#: `plot --out`: the picture formats, by file extension (crashlab.report.plot.FORMATS, which imports matplotlib).
PLOT_FORMATS = ("png", "pdf", "svg")

#: `sweep --list KIND`: which scenarios to list, by what their outcome shows.
LISTS = {
    "dups": lambda o: o.extra > 0,
    "asks": lambda o: o.asks > 0,
    "missing": lambda o: bool(o.missing),
    "calls": lambda o: o.calls_plus > 0,
    "stuck": lambda o: o.stuck > 0,
}


class Failure(click.ClickException):
    """Bad input: one line on stderr and exit code 2, never a traceback."""

    exit_code = 2


def open_job(spec: str) -> Job:
    """The job `--job` names: a shipped job by name, or a file by path."""
    try:
        return find_job(spec)
    except JobError as error:
        raise Failure(str(error)) from None


def names(spec: str, valid: dict, what: str) -> list[str]:
    """A comma-separated list of names from `valid`, each named once."""
    chosen = [name.strip() for name in spec.split(",")]
    for k, name in enumerate(chosen):
        if name not in valid:
            raise Failure(f"unknown {what} {shown(name)} (valid: all, {', '.join(valid)})")
        if name in chosen[:k]:
            raise Failure(f"{what} {name!r} is named twice in {shown(spec)}")
    return chosen


def choose_variants(loop: str | None, variant: str | None, tracker: str | None) -> list[Variant]:
    """The variants a command runs: one vocabulary, VARIANTS' slugs, whatever the options say.

    `--variant` names variants of any loop; `--loop` (designs by default) says whose variants `all`
    means, and `--tracker MODE` is shorthand for `--variant agent-MODE`. Combinations that contradict
    each other are refused rather than one of them ignored.
    """
    if variant is not None and tracker is not None:
        raise Failure("give --variant or --tracker, not both (--tracker MODE is short for --variant agent-MODE)")
    if tracker is not None:
        if loop == "designs":
            raise Failure("--tracker chooses the agent loop's trackers; the designs have none (drop --loop designs)")
        modes = list(TRACKER_MODES) if tracker == "all" else names(tracker, dict.fromkeys(TRACKER_MODES), "tracker")
        return [AGENTS[f"agent-{mode}"] for mode in modes]
    if variant is None or variant == "all":
        if loop in FRAMEWORKS:
            raise Failure(f"--loop {loop} runs only under `crashlab sweep --loop {loop} --kill`")
        return [v for v in LOOPS[loop or "designs"].values() if v.slug not in BEYOND_THE_BOOK]
    chosen = [VARIANTS[slug] for slug in names(variant, VARIANTS, "variant")]
    if loop is not None:
        strangers = [v.slug for v in chosen if v.slug not in LOOPS[loop]]
        if strangers:
            raise Failure(f"--loop {loop} has no variant {strangers[0]!r} (its variants: {', '.join(LOOPS[loop])})")
    return chosen


def every_scenario(sweeps: list[VariantSweep]) -> Iterator[ScenarioResult]:
    """Each sweep's scenarios in turn, made one at a time: a deep sweep's millions are never all held."""
    return (result for s in sweeps for result in s.scenarios())


def columns_for(variants: list[Variant], depth: int = 2) -> report.Columns:
    """The book's columns when every variant is a design, else the agent table's; a column per depth."""
    columns = report.DESIGN_COLUMNS if all(v.slug in LOOPS["designs"] for v in variants) else report.AGENT_COLUMNS
    return report.at_depth(columns, depth)


def check_handles(job: Job, variants: list[Variant]) -> None:
    for variant in variants:
        if reason := variant.refuses(job):
            raise Failure(reason)


def sweep_all(variants: list[Variant], job: Job, store: str, depth: int = 2, share: bool = True, workers: int = 1,
              scheduler: str | None = None, kill: bool = False) -> list[VariantSweep]:
    """Sweep each variant, with a progress bar on stderr if that is a terminal and it takes a while.

    The bar counts scenarios, over every worker. How many there are is known only once the restarts
    have run, so it shows the count and the rate, not a fraction.
    """
    from tqdm import tqdm

    from crashlab.engine.parallel import SchedulerError
    from crashlab.engine.parallel import sweep_all as sweep_everything

    with tqdm(desc="sweep", unit=" scenarios", delay=1.0, file=sys.stderr, disable=not sys.stderr.isatty(),
              leave=False) as bar:
        try:
            return sweep_everything(variants, job, store, depth, share, workers, scheduler, bar.update, kill)
        except SchedulerError as error:
            raise Failure(str(error)) from None


job_option = click.option(
    "--job", "job_spec", default=DEFAULT_JOB, show_default=True, metavar="NAME|FILE",
    help="The scripted job: a shipped job's name (see `crashlab jobs`) or a YAML file. A value that is an "
         "existing file, holds a '/' or ends in .yaml is a path.",
)


sync_option = click.option(
    "--sync", type=click.Choice(SYNCS), default=None, show_default="none",
    help="With --fault power-cut, what each checkpoint save syncs: none; file, its data before the rename; full, "
         "the directory after it too (the file store's default, and what `crashlab run` does).")


commit_option = click.option(
    "--commit", type=click.Choice(COMMITS), default=None, show_default="ack-first",
    help="With --fault tracker-crash, how the tracker makes a request durable: ack-first answers, then commits; "
         "two-step commits the record, then its key; one-txn commits both in one transaction, then answers.")
drift_option = click.option(
    "--drift", type=click.Choice(DRIFTS), default=None, show_default="ids",
    help="With --fault drifting-model, how the model answers a turn it is asked for again: ids, with call IDs "
         "of its own making; order, with those and its calls in another order.")


def check_settings(fault: str, sync: str | None, drift: str | None, commit: str | None) -> None:
    """A fault's setting given without its fault is refused, never ignored."""
    for option, value, owner, says in (("--sync", sync, "power-cut", "what a power cut finds on the disk"),
                                       ("--drift", drift, "drifting-model", "how a drifting model answers"),
                                       ("--commit", commit, "tracker-crash", "how a crashing tracker commits")):
        if value is not None and fault != owner:
            raise Failure(f"{option} says {says}: it needs --fault {owner}, not {fault}")


def variant_options(command):
    """--loop, --variant and --tracker: one vocabulary of variants, shared by every command that sweeps."""
    command = click.option(
        "--tracker", metavar="all|MODE[,MODE...]",
        help=f"Short for --variant agent-MODE: the agent's loop against trackers {', '.join(TRACKER_MODES)}.",
    )(command)
    command = click.option(
        "--variant", metavar="all|SLUG[,SLUG...]",
        help=f"Which variants, each named once: {', '.join(VARIANTS)}. [default: all of --loop]",
    )(command)
    return click.option(
        "--loop", type=click.Choice([*LOOPS, *FRAMEWORKS]),
        help="Whose variants 'all' means: the chapter's five designs, crashlab's own agent loop, or the job as a "
             "LangGraph agent or a DBOS workflow (sweep --kill only). [default: designs]",
    )(command)


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
    crashlab sweep --loop agent         the agent's own loop against three kinds of tracker
    crashlab jobs                       the shipped jobs, for --job NAME
    crashlab schema                     the job file's JSON Schema, for editors
    crashlab run JOB --dir DIR          the agent's loop as a real process: kill -9 it, run it again
    crashlab sweep --kill               every process a real one, SIGKILLed at its crash point
    crashlab sweep --loop langgraph --kill   a LangGraph agent (or --loop dbos, a DBOS workflow), killed for real
    crashlab faults                     what else can break: the fault models for sweep --fault
    """
    if ctx.invoked_subcommand is None:
        click.echo(ctx.get_help())


@cli.command()
@job_option
@variant_options
@click.option("--store", type=click.Choice(STORE_KINDS), default=None, show_default="memory; files with --kill",
              help="Where checkpoints go: in memory, or real JSON files replaced with os.replace.")
@click.option("--format", "fmt", type=click.Choice(["table", "json", "csv"]), default="table", show_default=True,
              help="A table for people, JSON or CSV for scripts.")
@click.option("--check", "golden", metavar="GOLDEN",
              help="Exit 1, naming each difference, unless the table has exactly GOLDEN's rows and the cells of the "
                   "columns it names.")
@click.option("--list", "listing", type=click.Choice(list(LISTS)),
              help="Instead of the table, list the scenarios that duplicated, asked, lost an effect or called the model again.")
@click.option("--out", metavar="DIR",
              help="Also write scenarios.jsonl, summary.json, summary.csv and manifest.json into DIR (checked before "
                   "the sweep; written whole at the end).")
@click.option("--depth", type=click.IntRange(1, MAX_DEPTH), default=2, show_default=True,
              help="Crash up to this many processes per scenario (the book's sweep is 2).")
@click.option("--no-share", "replay", is_flag=True,
              help="Re-execute every scenario from nothing instead of restarting from the snapshot its crash left: "
                   "slower, and the oracle that sharing must equal.")
@click.option("--workers", type=click.IntRange(1, MAX_WORKERS), default=default_workers, show_default="the cores",
              help="Processes to spread the sweep over, by first crash point. The output is the same for any number.")
@click.option("--scheduler", metavar="tcp://HOST:PORT",
              help="Send the work to this running Dask scheduler instead (needs crashlab[dask]); same output.")
@click.option("--fault", type=click.Choice([*FAULTS, "all"]), default="crash", show_default=True,
              help="What breaks, beyond the loop's process: see `crashlab faults` for each. all sweeps each fault "
                   "at each of its settings (every variant unless --variant, --loop or --tracker says) and ends "
                   "with the matrix of worst outcomes, which --out DIR writes with its picture.")
@sync_option
@commit_option
@drift_option
@click.option("--kill", is_flag=True,
              help="Make every process of every scenario a real OS process, forked from this one, that SIGKILLs "
                   "itself at its crash point, over a world in SQLite and a checkpoint file. It uses the file "
                   "store (a memory store cannot outlive a real death) and re-executes every scenario (--no-share).")
def sweep(job_spec: str, loop: str | None, variant: str | None, tracker: str | None, store: str | None, fmt: str,
          golden: str | None, listing: str | None, out: str | None, depth: int, replay: bool, workers: int,
          scheduler: str | None, fault: str, sync: str | None, commit: str | None, drift: str | None,
          kill: bool) -> None:
    """Crash the loop at every point, and its restart at every point, and count the damage.

    \b
    Columns (each sums over the single- and double-crash scenarios):
      once       crash points of the uninterrupted run: one single-crash scenario each
                 (the agent table calls them points, and counts all scenarios)
      twice      double-crash scenarios: the restart crashed too, at each point it reached
      with dups  scenarios that left at least one duplicate in the tracker
      dups       duplicate records, copies beyond the first
      missing    changing calls that left no record at all
      asks       "did it happen?" questions to a person
      approvals  approval decisions asked of a person (agent loop)
      calls+     model calls beyond the uninterrupted run's
    The five designs' table shows the first seven; any agent variant brings the agent table's columns.
    """
    if kill and store == "memory":
        raise Failure("--kill needs --store files: a memory store cannot outlive a real death")
    if loop in FRAMEWORKS:
        return sweep_framework(loop, job_spec, variant or tracker, kill, depth, fmt, listing, golden or out, workers)
    check_settings(fault, sync, drift, commit)
    if fault != "crash":
        given = [name for name, on in (("--kill", kill), ("--no-share", replay), ("--check", golden),
                                       ("--out", out and fault != "all"), ("--scheduler", scheduler),
                                       ("--store", store)) if on]
        if given:
            raise Failure(f"--fault {fault} sweeps in process, shared, on the memory store: it takes no {given[0]}")
        if fault == "all":
            if listing is not None:
                raise Failure("--list lists the scenarios of one fault: give --fault SLUG (see `crashlab faults`)")
            every = variant is None and tracker is None and loop is None  # the matrix: every loop, by default
            variants = list(VARIANTS.values()) if every else choose_variants(loop, variant, tracker)
            return show_every_fault(variants, open_job(job_spec), depth, fmt, out)
        variants = choose_variants(loop, variant, tracker)
        settings = {"sync": sync or "none", "drift": drift or "ids", "commit": commit or "ack-first"}
        return show_fault_sweep(fault, settings, variants, open_job(job_spec), job_spec, depth, fmt, listing)
    variants = choose_variants(loop, variant, tracker)
    columns = columns_for(variants, depth)
    job = open_job(job_spec)
    check_handles(job, variants)
    expected = None
    if golden is not None:
        try:
            expected = report.read_golden(golden)
        except report.GoldenError as error:
            raise Failure(str(error)) from None
    pending = open_results(out)
    try:
        sweeps = sweep_all(variants, job, store or ("files" if kill else "memory"), depth, not (replay or kill),
                           workers, scheduler, kill)
        rows = [s.row() for s in sweeps]
        if pending is not None:
            pending.commit(job, rows, every_scenario(sweeps), columns)
    except report.ResultsError as error:
        raise Failure(str(error)) from None
    finally:
        if pending is not None:
            pending.discard()

    if listing is not None:
        echo_listing(every_scenario(sweeps), listing, job_spec, fmt)
    else:
        formats = {"table": report.table, "json": report.to_json, "csv": report.to_csv}
        click.echo(formats[fmt](rows, columns).rstrip("\n"))
    if out is not None:
        click.echo(f"wrote {sum(r.scenarios for r in rows)} scenarios and the table to {out}/", err=True)
    if expected is not None:
        differences = report.compare(rows, expected)
        for line in differences:
            click.echo(f"differs: {line}", err=True)
        if differences:
            sys.exit(1)
        click.echo(f"matches {golden}", err=True)


def echo_listing(scenarios: Iterable[ScenarioResult], listing: str, job_spec: str, fmt: str, options: str = "") -> None:
    """`sweep --list KIND`: the scenarios whose outcome KIND picks, each with the command that explains it."""
    chosen = [r for r in scenarios if LISTS[listing](r.outcome)]
    commands = [f"crashlab explain {r.id} --job {shlex.quote(job_spec)}{options}" for r in chosen]
    if fmt == "table":
        lines = [[r.id, r.labels[0], command] for r, command in zip(chosen, commands)]
        click.echo(report.grid(lines) if lines else f"no scenario with {listing}")
    else:
        data = [{"id": r.id, "first_crash": r.labels[0], "command": c} for r, c in zip(chosen, commands)]
        text = json.dumps(data, indent=2) if fmt == "json" else report.csv_text(data, ["id", "first_crash", "command"])
        click.echo(text.rstrip("\n"))


def show_fault_sweep(fault: str, settings: dict[str, str], variants: list[Variant], job: Job, job_spec: str,
                     depth: int, fmt: str, listing: str | None) -> None:
    """`sweep --fault SLUG`: the fault's scenarios, one row per variant, or the list of those that `listing` picks.

    `settings` holds each fault's setting (sync, drift, commit); the fault takes its own.
    """
    check_handles(job, variants)
    swept = [sweep_fault(fault, v, job, depth, **settings) for v in variants]
    if listing is not None:
        name = SETTING_OF.get(fault)
        options = f" --fault {fault}" + (f" --{name} {settings[name]}" if name else "")
        return echo_listing((r for s in swept for r in s.scenarios()), listing, job_spec, fmt, options)
    rows = [s.record() for s in swept]
    if fmt == "table":
        click.echo(fault_table(rows))
    elif fmt == "json":
        click.echo(json.dumps(rows, indent=2))
    else:
        click.echo(report.csv_text(rows, list(rows[0])).rstrip("\n"))


def fault_table(rows: list[dict]) -> str:
    """A fault sweep's rows for people: the name says the variant, the command the fault."""
    heads = [h for h in rows[0] if h not in ("variant", "fault")]
    return report.grid([[r[h] for h in heads] for r in rows], [h.replace("_", " ") for h in heads], "github")


def show_every_fault(variants: list[Variant], job: Job, depth: int, fmt: str, out: str | None) -> None:
    """`sweep --fault all`: each fault at each of its settings, a table each, then the matrix of worst outcomes."""
    check_handles(job, variants)
    pending = open_results(out)
    crashed: dict[str, VariantSweep] = {}  # each variant's crash sweep, swept once for every fault's row

    def crash_of(v: Variant) -> VariantSweep:
        if v.slug not in crashed:
            crashed[v.slug] = sweep_variant(v, job, memory_stores(), depth)
        return crashed[v.slug]

    try:
        records, tables = [], []
        for fault, name, value in EVERY_SETTING:
            began = time.perf_counter()
            settings = {name: value} if name else {}
            rows = [sweep_fault(fault, v, job, depth, **settings, crash=crash_of(v)).record() for v in variants]
            setting = rows[0]["setting"]
            click.echo(f"swept {fault}{f' ({setting})' if setting else ''}: {sum(r['scenarios'] for r in rows):,} "
                       f"scenarios in {time.perf_counter() - began:.1f} s", err=True)
            records += rows
            tables.append(f"## {fault}{f', {setting}' if setting else ''}\n\n{fault_table(rows)}")
        columns, cells = matrix.matrix(records)
        grid = report.grid([[r["name"], *(matrix.text(r[c]) for c in columns)] for r in cells], ["name", *columns],
                           "github")
        text = "\n\n".join([*tables, f"## the worst outcome of each fault\n\n{grid}"])
        if pending is not None:
            pending.put(lambda into: matrix.write(into, job, records, columns, cells, text), matrix.FILES)
    except report.ResultsError as error:
        raise Failure(str(error)) from None
    finally:
        if pending is not None:
            pending.discard()
    if fmt == "table":
        click.echo(text)
    elif fmt == "json":
        click.echo(json.dumps({"faults": records, "matrix": cells}, indent=2))
    else:
        click.echo(report.csv_text(records, list(records[0])).rstrip("\n"))
    if out is not None:
        click.echo(f"wrote every fault's rows, the matrix and its picture to {out}/", err=True)


def open_results(out: str | None) -> report.PendingResults | None:
    """Where `--out` results will go, checked before the sweep begins; None without --out."""
    if out is None:
        return None
    try:
        return report.PendingResults(out)
    except report.ResultsError as error:
        raise Failure(str(error)) from None


def sweep_framework(loop: str, job_spec: str, chosen: str | None, kill: bool, depth: int, fmt: str,
                    listing: str | None, unsupported: str | None, workers: int) -> None:
    """`crashlab sweep --loop langgraph --kill`: the job as a framework's agent, killed for real at every point."""
    if not kill:
        raise Failure(f"--loop {loop} needs --kill: a framework catches, retries or saves a raised exception "
                      "(LangGraph even writes checkpoints on a background executor), so only SIGKILL is a death there")
    if chosen is not None or unsupported is not None:
        raise Failure(f"--loop {loop} sweeps all of its variants, and takes no --variant, --tracker, --check or --out")
    if depth > 2:
        raise Failure(f"--loop {loop} sweeps to --depth 2 at most")
    if listing not in (None, "dups", "missing"):
        raise Failure(f"--loop {loop} lists dups or missing, not {listing}")
    job = open_job(job_spec)
    sweeps = framework(loop).sweep_variants(job, depth, workers=workers)
    if listing is not None:
        lines = [s.story() for sw in sweeps for s in sw.scenarios if (s.dups if listing == "dups" else s.missing)]
        click.echo("\n".join(lines) if lines else f"no scenario with {listing}")
        return
    rows = [sw.row() for sw in sweeps]
    if fmt == "table":
        click.echo(report.grid([list(r.values()) for r in rows], list(rows[0]), "github"))
    elif fmt == "json":
        click.echo(json.dumps(rows, indent=2))
    else:
        click.echo(report.csv_text(rows, list(rows[0])).rstrip("\n"))


@cli.command()
@click.option("--jobs", "count", type=click.IntRange(1, 1_000_000), default=20, show_default=True,
              help="How many generated jobs to sweep.")
@click.option("--seed", type=int, default=0, show_default=True, help="Job k of seed S is the same job on every machine.")
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
    variant that makes promises: keys and markers, and the agent's loop against each tracker. A
    scenario breaks a promise if it left a duplicate, lost an effect or saved a wrong result, asked
    the person where the tracker could have answered, or asked an approval other than once. Exit 1
    if any did; each such job is written to DIR as a YAML file, with the command that explains it.
    """
    from tqdm import tqdm

    from crashlab.check.campaign import campaign as run_campaign
    from crashlab.engine.parallel import SchedulerError

    with tqdm(total=count, desc="campaign", unit=" jobs", delay=1.0, file=sys.stderr, disable=not sys.stderr.isatty(),
              leave=False) as bar:
        try:
            verdicts = run_campaign(count, seed, depth, workers, scheduler, lambda v: bar.update(1))
        except SchedulerError as error:
            raise Failure(str(error)) from None
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
            raise Failure(f"cannot write the failing jobs to {out}: {error.strerror}") from None
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
        sys.exit(1)


@cli.command()
@click.argument("slug")
@job_option
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
def points(slug: str, job_spec: str, fmt: str) -> None:
    """List the crash points of SLUG's uninterrupted run.

    Each point: its index (the I of scenario SLUG:I), its label and which occurrence of that label it
    is, where it falls (turn, call, tool), and what is durable there: the checkpoint on disk and the
    tracker's records. A crash at that point leaves exactly this for the restart. In text, each line is
    cut to the terminal's width (…); --format json gives every record in full.
    """
    try:
        variant = explaining.find_variant(slug)
    except explaining.ScenarioError as error:
        raise Failure(str(error)) from None
    job = open_job(job_spec)
    check_handles(job, [variant])
    rows = explaining.point_rows(run_scenario(variant, job, (), memory_stores()))
    if fmt == "json":
        click.echo(json.dumps(rows, indent=2))
        return
    click.echo("\n".join(point_lines(rows, shutil.get_terminal_size((120, 24)).columns)))


def point_lines(rows: list[dict], width: int) -> list[str]:
    """The points as aligned lines, each at most `width` characters.

    Only the short fields (index, point, where) are aligned; what is durable, which grows with the job,
    ends the line and is cut at the width, so the output grows linearly with the points.
    """
    cells = [(str(r["index"]), f"{r['label']} #{r['occurrence']}", r["where"],
              f"{r['checkpoint']} | {', '.join(r['tracker']) or '-'}") for r in rows]
    heads = ("#", "point", "where", "on disk | tracker")
    widths = [max(len(c[k]) for c in [heads, *cells]) for k in range(3)]

    def line(c: tuple[str, ...]) -> str:
        text = f"{c[0]:>{widths[0]}}  {c[1]:<{widths[1]}}  {c[2]:<{widths[2]}}  {c[3]}"
        return text if len(text) <= width else text[: max(width - 1, 0)] + "…"

    return [line(heads), *map(line, cells)]


@cli.command()
@click.argument("scenario")
@job_option
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
@click.option("--fault", type=click.Choice(list(FAULTS)), default="crash", show_default=True,
              help="The fault the scenario was swept under: power-cut IDs carry a disk state per crash, I~S, "
                   "and expired-key IDs a downtime; wrong-answer IDs a final ~K; the others' are as the crash "
                   "sweep's (tracker-crash numbers the tracker's points among the loop's).")
@sync_option
@commit_option
@drift_option
def explain(scenario: str, job_spec: str, fmt: str, fault: str, sync: str | None, commit: str | None,
            drift: str | None) -> None:
    """Tell the story of one SCENARIO, process by process, and its verdict.

    SCENARIO is SLUG:I (crash the first process at its I-th point) or SLUG:I:J (also crash the
    restart at its J-th point), as `crashlab points` numbers them and `crashlab sweep --list` lists them.
    SLUG is any variant (see `crashlab sweep --help`); I and J are ASCII digits, counted from 1.
    A framework loop's scenario (langgraph-plain:14, dbos-plain:2, as `sweep --loop langgraph --kill
    --list dups` names them) is killed for real again and told with the framework's own points.
    """
    loop = next((loop for loop in FRAMEWORKS if scenario.startswith(f"{loop}-")), None)
    if loop is not None:
        return explain_framework(loop, scenario, open_job(job_spec), fmt)
    check_settings(fault, sync, drift, commit)
    try:
        explaining.parse_scenario_id(scenario, fault)
    except explaining.ScenarioError as error:
        raise Failure(str(error)) from None
    job = open_job(job_spec)
    try:
        run = explaining.find_scenario(scenario, job, fault, sync or "none", drift or "ids", commit or "ack-first")
    except explaining.ScenarioError as error:
        raise Failure(str(error)) from None
    told = explaining.story(run, job)
    click.echo(json.dumps(told, indent=2) if fmt == "json" else explaining.render(told))


@cli.command()
@click.option("--format", "fmt", type=click.Choice(["table", "json"]), default="table", show_default=True)
def faults(fmt: str) -> None:
    """The fault models `crashlab sweep --fault SLUG` takes: what each breaks, what it adds to the sweep."""
    data = [{"slug": f.slug, "breaks": f.breaks, "adds": f.adds} for f in FAULTS.values()]
    if fmt == "json":
        click.echo(json.dumps(data, indent=2))
    else:
        click.echo("\n".join(f"{f['slug']:<14} {f['breaks']}\n{'':<14} adds: {f['adds']}" for f in data))


def framework(loop: str):
    """The adapter module of a framework loop, or a one-line error naming the extra it needs."""
    try:
        return importlib.import_module(f"crashlab.adapters.{loop}")
    except ImportError:
        raise Failure(f"--loop {loop} needs its framework: pip install '{FRAMEWORKS[loop]}'") from None


def explain_framework(loop: str, scenario: str, job: Job, fmt: str) -> None:
    """A framework loop's scenario, killed for real again, process by process."""
    from crashlab import api

    adapter = framework(loop)
    slug = scenario.split(":", 1)[0]
    if slug not in adapter.VARIANTS:
        raise Failure(f"unknown variant {slug!r} (valid: {', '.join(adapter.VARIANTS)})")
    try:
        told = api.explain(adapter.entry(job, slug), [c.id for c in job.changing_calls], scenario)
    except ValueError as error:
        raise Failure(f"{scenario}: {error}") from None
    click.echo(json.dumps(told, indent=2) if fmt == "json" else api.render(told))


@cli.command()
@job_option
@variant_options
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path), default="results/sweep.png", show_default=True,
              help=f"The picture; its extension picks the format: {', '.join(PLOT_FORMATS)}.")
def plot(job_spec: str, loop: str | None, variant: str | None, tracker: str | None, out: Path) -> None:
    """Draw the sweep: each variant's single crashes, and its double crashes as a heatmap (needs crashlab[plot])."""
    fmt = out.suffix.lower().removeprefix(".")
    if fmt not in PLOT_FORMATS:
        raise Failure(f"cannot draw {out}: the extension picks the format, one of .{', .'.join(PLOT_FORMATS)}")
    variants = choose_variants(loop, variant, tracker)
    try:
        from crashlab.report.plot import draw
    except ImportError:
        raise Failure("crashlab plot needs matplotlib: pip install 'crashlab[plot]'") from None
    job = open_job(job_spec)
    check_handles(job, variants)
    sweeps = sweep_all(variants, job, "memory")
    try:
        click.echo(f"wrote {draw(sweeps, out, title=f'crashlab sweep of {job.source}', fmt=fmt)}")
    except OSError as error:
        raise Failure(f"cannot write the picture to {out}: {error.strerror}") from None


@cli.command()
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
        click.echo(report.grid([list(j.values()) for j in listed], ["job", "calls", "description"]))


@cli.command()
def schema() -> None:
    """Print the job file's JSON Schema, for editors and other tools (derived from crashlab.schema)."""
    from crashlab.job.schema import job_schema  # msgspec is needed here only

    click.echo(json.dumps(job_schema(), indent=2))


def terminate(signum: int, frame) -> None:
    """SIGTERM (`timeout`, a supervisor) unwinds like Ctrl-C, so every `with` block cleans up.

    A second SIGTERM is ignored while the cleanup runs; SIGKILL still ends the process at once.
    """
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    raise SystemExit(128 + signum)


@cli.command("run")
@click.argument("job_path", metavar="JOB")
@click.option("--dir", "directory", required=True, type=click.Path(path_type=Path), metavar="DIR",
              help="The run directory: tracker.sqlite, checkpoint.json and lock. Made if absent; its parent must exist.")
@click.option("--tracker", "tracker_mode", type=click.Choice(TRACKER_MODES),
              help="What the tracker does with keys. Default: the directory's own, keyed for a new one; "
                   "a directory is never resumed under another.")
@click.option("--person", type=click.Choice(list(running.PERSONS)), default="ask", show_default=True,
              help="Who answers: ask (on the terminal, showing the tracker's records); auto or yes (from the "
                   "tracker's records, approving every gated call); no (refuses every gated call, denies every call).")
@click.option("--crash-at", "kill_at", type=click.IntRange(min=1), metavar="N",
              help="SIGKILL this process at its N-th crash point (numbered as the sweep numbers them).")
@click.option("--pace", type=click.FloatRange(min=0), default=0.0, metavar="SECONDS",
              help="Sleep SECONDS at every crash point, to leave time to kill it by hand.")
def run_command(job_path: str, directory: Path, tracker_mode: str | None, person: str, kill_at: int | None,
                pace: float) -> None:
    """Run JOB with the agent's own loop as a real process, against a SQLite tracker in DIR.

    Kill it at any moment (Ctrl-C, kill -9) and run the same command again: it resumes from
    DIR/checkpoint.json and finishes with no duplicate and nothing lost under the keyed or lookup
    tracker (under keyless it asks the person). Each crash point is printed to stderr as it passes.
    Run again after it finished, it says so and changes nothing. Only one run at a time may use DIR.

    \b
    crashlab run triage --dir run1 --pace 0.5     then kill -9 it, and run it again
    crashlab tracker show run1                                   what the tracker holds
    crashlab checkpoint show run1                                what the checkpoint holds
    """
    job = open_job(job_path)
    try:
        finished = running.run(job, directory, tracker_mode, person, kill_at, pace)
    except running.RunError as error:
        raise Failure(str(error)) from None
    held = ", ".join(explaining.describe(r) for r in finished.records) or "nothing"
    if finished.already:
        click.echo(f"{directory}: already finished, nothing to do. The tracker holds {held}.")
    else:
        click.echo(f"finished: {finished.checkpoint.answer}")
        click.echo(f"the tracker holds {held}")


@cli.group("tracker")
def tracker_group() -> None:
    """Look at a run directory's tracker."""


@tracker_group.command("show")
@click.argument("directory", metavar="DIR", type=click.Path(path_type=Path))
@click.option("--format", "fmt", type=click.Choice(["table", "json"]), default="table", show_default=True)
def tracker_show(directory: Path, fmt: str) -> None:
    """List DIR's tracker records in the order they were made, marking a call's duplicates.

    A duplicate is a second record made by the same script call: the work was done twice.
    """
    try:
        rows = running.tracker_rows(directory)
    except running.RunError as error:
        raise Failure(str(error)) from None
    if fmt == "json":
        click.echo(json.dumps(rows, indent=2))
        return
    body = [[r["kind"], r["number"], r["call"], r["key"] or "-", r["issue"] or "",
             r["text"].splitlines()[0], "DUPLICATE" if r["duplicate"] else ""] for r in rows]
    click.echo(report.grid(body, ["kind", "#", "call", "key", "on", "text", "dup"], "simple")
               if rows else "no records")


@cli.group("checkpoint")
def checkpoint_group() -> None:
    """Look at a run directory's checkpoint."""


@checkpoint_group.command("show")
@click.argument("directory", metavar="DIR", type=click.Path(path_type=Path))
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
def checkpoint_show(directory: Path, fmt: str) -> None:
    """Print DIR's checkpoint: in the short form explain uses, or its JSON.

    \b
    T1 closed A=1 B=2 · T2 open S=[1] C:marker
    turn 1 closed with results for A and B; turn 2 open, S's result saved, C's attempt marker with no result
    """
    try:
        checkpoint = running.read_checkpoint(directory)
    except running.RunError as error:
        raise Failure(str(error)) from None
    click.echo(json.dumps(json.loads(checkpoint.to_json()), indent=2) if fmt == "json" else checkpoint.summary())


def main() -> None:
    """Run the CLI so that every usage error, too, is a single line on stderr with exit code 2."""
    previous = signal.signal(signal.SIGTERM, terminate)
    try:
        code = cli.main(standalone_mode=False)
    except click.exceptions.Abort:
        click.echo("aborted", err=True)
        code = 1
    except click.ClickException as error:
        click.echo(f"crashlab: error: {' '.join(error.format_message().split())}", err=True)
        code = error.exit_code
    except HarnessError as error:  # the loop under test broke a rule of death: its table would be fiction
        click.echo(f"crashlab: harness error: {' '.join(str(error).split())}", err=True)
        code = 3
    finally:
        signal.signal(signal.SIGTERM, previous)  # a caller (a test, an embedding program) gets its own back
    sys.exit(code or 0)


if __name__ == "__main__":
    main()
