"""`crashlab sweep`: crash a loop at every point, and its restart at every point, and count the damage."""

from __future__ import annotations

import json
import shlex
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import replace
from datetime import datetime
from pathlib import Path
from typing import Any

import click

from crashlab.cli.options import (
    FORMATS,
    Faulted,
    check_handles,
    choose,
    fault_options,
    faults_of,
    fs_points_option,
    job_option,
    profile_option,
    profiles_of,
    repeat_option,
    runner_for,
    time_limit_option,
    variant_options,
)
from crashlab.cli.progress import progress
from crashlab.durable.store import STORE_KINDS
from crashlab.engine.parallel import MAX_WORKERS, default_workers
from crashlab.engine.sweep import MAX_DEPTH, sweep_all
from crashlab.engine.tree import Row, VariantSweep
from crashlab.errors import BadInput, CheckFailed, Flaky
from crashlab.faults.interleave import LIMIT, MOST, bounded
from crashlab.job import Job
from crashlab.loops import VARIANTS
from crashlab.profiles import DEFAULT
from crashlab.protocols.fault import every_setting
from crashlab.protocols.scenario import ScenarioResult, Setup
from crashlab.protocols.variant import Variant
from crashlab.report import expect, golden, matrix, tables
from crashlab.report.junit import junit
from crashlab.report.receipts import Receipts
from crashlab.report.results import PendingResults
from crashlab.report.windows import causes, describe, tell, windows
from crashlab.runners import RunnerSpec

#: `sweep --max-scenarios`: about a minute of scenarios in process (the depth-3 book sweep is 58,695), and
#: hours of them killed for real; past it, a sweep is a mistake more often than a plan.
MAX_SCENARIOS = 10_000_000

#: `sweep --list KIND`: which scenarios to list, by what their outcome shows.
LISTS = {
    "dups": lambda o: o.extra > 0,
    "asks": lambda o: o.asks > 0,
    "missing": lambda o: bool(o.missing),
    "calls": lambda o: o.calls_plus > 0,
    "stuck": lambda o: o.stuck > 0,
    "flaky": lambda o: o.flaky > 0,
}


class Interleavings(click.ParamType):
    """`--interleavings`: a number of schedules from 1 to `MOST`, or ``all``."""

    name = "interleavings"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> int | str:
        if value == "all" or (isinstance(value, int) and 1 <= value <= MOST):
            return value
        if isinstance(value, str) and value.isascii() and value.isdigit() and 1 <= int(value) <= MOST:
            return int(value)
        self.fail(f"{value!r} is not all or a number of schedules from 1 to {MOST:,}", param, ctx)


@click.command(cls=Faulted)
@job_option
@variant_options
@click.option("--store", type=click.Choice(STORE_KINDS), default=None, show_default="memory; files with --kill",
              help="Where checkpoints go: in memory, or real JSON files replaced with os.replace.")
@click.option("--format", "fmt", type=click.Choice([*FORMATS, "junit"]), default="table", show_default=True,
              help="A table for people, JSON or CSV for scripts, JUnit XML for CI (a test suite per variant, a case "
                   "for it and one per effect, failed with its windows).")
@click.option("--junit", "junit_file", metavar="FILE",
              help="Also write the JUnit XML into FILE, whatever --format prints.")
@click.option("--check", "golden_file", metavar="GOLDEN",
              help="Exit 1, naming each difference, unless the table has exactly GOLDEN's rows and the cells of the "
                   "columns it names.")
@click.option("--expect", "expect_file", metavar="FILE",
              help="Exit 1, naming each difference, if a count passes its most in FILE (YAML, per variant: dups: 0, "
                   "asks: 40) or a variant FILE names was not swept.")
@click.option("--list", "listing", type=click.Choice(list(LISTS)),
              help="Instead of the table, list the scenarios that duplicated, asked, lost an effect, called the "
                   "model again, got stuck or were flaky, each with the command that explains it.")
@click.option("--out", metavar="DIR",
              help="Also write scenarios.jsonl, receipts.jsonl (a record per window that failed or asked), "
                   "summary.json, summary.csv and manifest.json into DIR (checked before the sweep; written whole at "
                   "the end); `crashlab report DIR` draws them.")
@click.option("--depth", type=click.IntRange(1, MAX_DEPTH), default=2, show_default=True,
              help="Crash up to this many processes per scenario (the book's sweep is 2).")
@click.option("--max-scenarios", type=click.IntRange(1), default=MAX_SCENARIOS, show_default=True,
              help="Refuse a sweep of more scenarios than this, every variant together: before it grows, if its "
                   "estimate (from each uninterrupted run's crash points and the depth; meant to err low) is more, "
                   "else as it grows, once it has grown more.")
@click.option("--no-share", "replay", is_flag=True,
              help="Re-execute every scenario from nothing instead of restarting from the snapshot its crash left: "
                   "slower, and the oracle that sharing must equal.")
@click.option("--workers", type=click.IntRange(1, MAX_WORKERS), default=default_workers, show_default="the cores",
              help="Processes to spread the sweep over, by first crash point. The output is the same for any number.")
@click.option("--scheduler", metavar="tcp://HOST:PORT",
              help="Send the work to this running Dask scheduler instead (needs crashlab[dask]); same output.")
@fault_options
@click.option("--kill", is_flag=True,
              help="Run every process of every scenario on the forked runner: a real OS process, forked from this "
                   "one, that SIGKILLs itself at its crash point, over a world in SQLite and a checkpoint file. "
                   "Restarts start from copies of the run directory, taken with the process stopped where its "
                   "death would be, for loops that keep all they keep there; --no-share re-executes every one.")
@click.option("--interleavings", type=Interleavings(), default=None, show_default=str(LIMIT), metavar="N|all",
              help="With --fault interleave, the most schedules of the threads to run, or all: the default's, one for "
                   "each other order in which the calls can reach the world (found by a search of the uninterrupted "
                   "run), one for each order with most calls in flight at once, each of these with its restarts "
                   "running their threads in each other order, then those that depart from the default at one "
                   "decision, those that preempt no thread first (CHESS's order). The table says which orders it "
                   "covered, which it ran with most in flight, and after how many the restarts ran in each order.")
@click.option("--state-in-run-dir", is_flag=True,
              help="For a loop of yours: your word that it keeps all it keeps in CRASHLAB_RUN_DIR (and crashlab's "
                   "service), so its restarts may start from copies of what each death left, each distinct state "
                   "once. Checked first: at its first, middle and last crash point, a restart from a copy must do "
                   "what the restart after the death does, or the sweep is refused.")
@fs_points_option
@profile_option
@time_limit_option
@repeat_option
def sweep(job_spec: str, loop: str | None, variant: str | None, tracker: str | None, effects_file: str | None,
          scheduled: bool, commands: tuple[str, ...], store: str | None, fmt: str, junit_file: str | None,
          golden_file: str | None, expect_file: str | None, listing: str | None, out: str | None, depth: int,
          max_scenarios: int, replay: bool, workers: int, scheduler: str | None, fault_slugs: tuple[str, ...],
          kill: bool, time_limit: float, repeat: int, interleavings: int | str | None, state_in_run_dir: bool,
          fs_points: bool, profile_name: str | None, **settings: str | None) -> None:
    """Crash the loop at every point, and its restart at every point, and count the damage.

    \b
    Columns (each sums over the scenarios of every depth):
      once       crash points of the uninterrupted run: one single-crash scenario each
                 (the agent table calls them points, and counts all scenarios)
      twice      double-crash scenarios: the restart crashed too, at each point it reached
      distinct   distinct durable states the scenarios' last crashes left (a loop's own
                 files, by what followed them: the same shared or re-executed)
      windows    failure windows, each once: spans of consecutive crash points that fail
                 alike (not in the book's own table). Quote these two: unlike the
                 scenario counts, they do not grow with how densely a loop is marked
      with dups  scenarios that left at least one duplicate in the tracker
      dups       duplicate records, copies beyond the first
      missing    changing calls that left no record at all
      wrong      calls whose saved result names a record the call did not make
      asks       "did it happen?" questions to a person
      approvals  approval decisions asked of a person (agent loop)
      calls+     model calls beyond the uninterrupted run's
    JSON and CSV carry every count: stuck runs, orphan records and flaky scenarios too.
    A flaky scenario (--repeat: its runs differ; or, for a loop of yours, a process that strays
    from the run it repeats) counts the worst it came to, and fails the sweep with exit 3.
    """
    profiles = profiles_of(profile_name) if profile_name is not None else None
    if profiles is not None and ("all" in fault_slugs or golden_file is not None or expect_file is not None or
                                 out is not None or repeat > 1 or fmt == "junit" or junit_file is not None):
        raise BadInput("--profile prints the loop × profile table: it takes no --fault all, --check, --expect, --out, "
                       "--repeat or JUnit (sweep one profile's scenarios with --list, explain one by its ID)")
    job, variants = choose(job_spec, loop, variant, tracker, effects_file, scheduled, state_in_run_dir, commands,
                           fs_points)
    spec = runner_for(variants, kill, store, time_limit)
    if "all" in fault_slugs:
        if len(fault_slugs) > 1 or any(settings.values()) or interleavings is not None:
            raise BadInput("--fault all sweeps every fault at each of its settings: it takes no other --fault, and "
                           "no setting")
        if listing is not None or golden_file is not None or repeat > 1 or fmt == "junit" or \
                junit_file is not None or expect_file is not None:
            raise BadInput("--fault all ends with the matrix of worst outcomes: --list, --check, --expect, --repeat "
                           "and JUnit take one fault")
        every = variant is None and tracker is None and loop is None  # the matrix: every loop of crashlab's own
        chosen = [v for v in VARIANTS.values() if "in-process" in v.runners] if every else variants
        return every_fault(chosen, job, spec, depth, fmt, out, workers, scheduler, max_scenarios)
    faults = faults_of(fault_slugs, settings)
    if interleavings is not None:
        faults = bounded(faults, None if interleavings == "all" else int(interleavings))
    if listing is not None and fmt == "junit":
        raise BadInput("--list prints a table, JSON or CSV: JUnit XML is the sweep's, without --list")
    expected = golden.read_golden(golden_file) if golden_file is not None else None
    bounds = expect.read_expectations(expect_file) if expect_file is not None else None
    if junit_file is not None:
        writable(junit_file)
    explaining = replay_command(job_spec, loop, effects_file, tracker, repeat, scheduled, commands, fs_points)
    if profiles is not None:
        return every_profile(profiles, [Setup(v, job, faults) for v in variants], spec, depth, not replay, workers,
                             scheduler, max_scenarios, fmt, listing, explaining)
    began, when = time.perf_counter(), datetime.now()
    pending = PendingResults(out) if out is not None else None
    try:
        # A loop of yours that strays is flaky, and shown so; one of crashlab's fails at once (its bug, not yours).
        sweeps = swept([Setup(v, job, faults) for v in variants], spec, depth, not replay and repeat == 1, workers,
                       scheduler, max_scenarios, repeat, strays_fail=not all(v.table == "loop" for v in variants))
        rows = [s.row() for s in sweeps]
        if faults and not any(r.scenarios for r in rows):  # a table of zeros would say the loop came through
            raise BadInput(f"{' '.join(f'--fault {slug}' for slug in fault_slugs)} makes no scenario of "
                           f"{', '.join(v.slug for v in variants)}: in none of its crash scenarios does "
                           f"{' + '.join(f.slug for f in faults.members)} find anything to break, so the table would "
                           "be all zeros; sweep a loop it reaches (crashlab faults says what each breaks)")
        columns = columns_for(variants, depth, rows)
        if pending is not None:
            pending.commit(job, rows, every_scenario(sweeps), columns,
                           Receipts(job, {v.slug: v for v in variants}, explaining, repeat))
    finally:
        if pending is not None:
            pending.discard()
    seconds = time.perf_counter() - began
    if fmt == "junit" or junit_file is not None:
        xml = junit(rows, windows(every_scenario(sweeps)), {v.slug: [c.id for c in v.intended(job)] for v in variants},
                    explaining, seconds, when)
        if junit_file is not None:
            try:
                Path(junit_file).write_text(xml, encoding="utf-8")
            except OSError as error:
                raise BadInput(f"cannot write the JUnit XML to {junit_file}: {error.strerror}") from None
    if listing is not None:
        echo_listing(every_scenario(sweeps), listing, explaining, fmt)
    elif fmt == "junit":
        click.echo(xml.rstrip("\n"))
    else:
        formats = {"table": tables.table, "json": tables.to_json, "csv": tables.to_csv}
        click.echo(formats[fmt](rows, columns).rstrip("\n"))
        if fmt == "table" and (repeated := sum(r.repeated for r in rows)):
            click.echo(f"{repeated:,} restart{'s' if repeated != 1 else ''}, one from each state a first death left, "
                       "ran twice to see that the loop repeats itself (a scenario whose two runs differ is flaky)",
                       err=True)
        if any(v.calls_service for v in variants):
            echo_windows(lambda: every_scenario(sweeps), explaining)
    if out is not None:
        click.echo(f"wrote {sum(r.scenarios for r in rows)} scenarios and the table to {out}/", err=True)
    if flaky := sum(r.flaky for r in rows):
        raise Flaky(f"{flaky} flaky scenario{'s' if flaky > 1 else ''}: {'their' if flaky > 1 else 'its'} runs "
                    "differ, so the table counts the worst each came to (--list flaky names them)")
    if expected is not None:
        differences = golden.compare(rows, expected)
        held(differences, f"the table differs from {golden_file} in {len(differences)} cell(s)",
             f"matches {golden_file}")
    if bounds is not None:
        differences = expect.compare(rows, bounds)
        held(differences, f"the sweep breaks {len(differences)} expectation(s) of {expect_file}",
             f"meets {expect_file}")


def every_profile(profiles: list[str], setups: list[Setup], spec: RunnerSpec, depth: int, share: bool, workers: int,
                  scheduler: str | None, max_scenarios: int, fmt: str, listing: str | None,
                  explaining: Callable[[str], str]) -> None:
    """`sweep --profile`: the setups swept against a tracker keeping each profile's contract in turn, printed as one
    table, loop × profile (or, with `listing`, every profile's scenarios that `listing` picks, IDs ``...@SLUG``).

    Under several profiles, or one not the default's, a loop whose uninterrupted run fails just after the contract
    refused its request by the contract's own rules (`RefusedByContract`: ACP's 400 to a request with no key) is
    that profile's row, blank, saying so, and the other rows still stand: what a contract refuses is a finding, as
    the in-process world counts such a refusal missing. Any other failure fails the sweep, as a single sweep's does;
    a sweep under the default profile alone is the sweep it always was."""
    refusals_are_rows = len(profiles) > 1 or profiles != [DEFAULT]
    swept_under: dict[str, list[VariantSweep]] = {}
    refused: dict[tuple[str, str], str] = {}  # (profile, variant) → why its row has no counts
    for profile in profiles:
        began = time.perf_counter()
        under = [replace(setup, profile=profile) for setup in setups]
        swept_under[profile] = swept_refusing(under, spec, depth, share, workers, scheduler, max_scenarios, refused) \
            if refusals_are_rows else swept(under, spec, depth, share, workers, scheduler, max_scenarios)
        click.echo(f"swept profile {profile}: {sum(s.row().scenarios for s in swept_under[profile]):,} scenarios in "
                   f"{time.perf_counter() - began:.1f} s", err=True)
    by_slug = {profile: {s.setup.variant.slug: s.row() for s in swept_under[profile]} for profile in profiles}
    rows: list[tuple[str, Row | tables.Failed]] = [
        (profile, by_slug[profile][v.slug] if v.slug in by_slug[profile] else
         tables.Failed(v.slug, v.name, refused[profile, v.slug])) for v in (s.variant for s in setups)
        for profile in profiles]
    counted = [row for _, row in rows if isinstance(row, Row)]
    faults = setups[0].faults
    if faults and not any(row.scenarios for row in counted):
        raise BadInput(f"{' + '.join(f.slug for f in faults.members)} makes no scenario of "
                       f"{', '.join(s.variant.slug for s in setups)} under any profile: the table would be all zeros")
    if listing is not None:
        for (profile, slug), why in refused.items():
            click.echo(f"{slug}@{profile}: {why}", err=True)
        every = (result for profile in profiles for result in every_scenario(swept_under[profile]))
        return echo_listing(every, listing, explaining, fmt)
    columns = columns_for([s.variant for s in setups], depth, counted)
    if fmt == "table":
        click.echo(tables.by_profile(rows))
    elif fmt == "json":
        click.echo(json.dumps(tables.profile_records(rows, columns), indent=2))
    else:
        data = [{k: v for k, v in r.items() if k != "by_depth"} for r in tables.profile_records(rows, columns)]
        click.echo(tables.csv_text(data, list(dict.fromkeys(k for r in data for k in r))).rstrip("\n"))


def swept_refusing(setups: list[Setup], spec: RunnerSpec, depth: int, share: bool, workers: int, scheduler: str | None,
                   max_scenarios: int, refused: dict[tuple[str, str], str]) -> list[VariantSweep]:
    """`swept`, but a setup whose uninterrupted run its contract refused is left out, and why is put in `refused`
    under its profile and slug; the rest are swept again without it. A contract refuses a run before any tree
    grows (every uninterrupted run comes first), so what is swept again is only the others' uninterrupted runs."""
    from crashlab.runners.served import RefusedByContract  # here: a sweep in process never starts the service

    left = list(setups)
    while left:
        try:
            return swept(left, spec, depth, share, workers, scheduler, max_scenarios)
        except RefusedByContract as refusal:
            refused[refusal.profile, refusal.variant] = \
                f"refused by the {refusal.profile} contract: its uninterrupted run failed ({refusal.refusal})"
            left = [s for s in left if s.variant.slug != refusal.variant]
    return []


def held(differences: list[str], broken: str, holds: str) -> None:
    """A check's verdict on stderr: each difference a line, then `CheckFailed` (`broken`); or the line `holds`."""
    for line in differences:
        click.echo(f"differs: {line}", err=True)
    if differences:
        raise CheckFailed(broken)
    click.echo(holds, err=True)


def writable(path: str) -> None:
    """Refuse, before the sweep, a file that could not be written after it: a directory, or in no directory."""
    where = Path(path)
    if where.is_dir():
        raise BadInput(f"cannot write to {path}: it is a directory")
    if not where.absolute().parent.is_dir():
        raise BadInput(f"cannot write to {path}: {where.absolute().parent} is not a directory")


def columns_for(variants: list[Variant], depth: int, rows: list[Row]) -> tables.Columns:
    faulted = any(r.faults != "crash" for r in rows)
    return tables.columns_for([v.table for v in variants], depth, any(r.uncrashed for r in rows), faulted,
                              any(r.orders for r in rows))


def swept(setups: list[Setup], spec: RunnerSpec, depth: int, share: bool, workers: int, scheduler: str | None,
          max_scenarios: int, repeat: int = 1, strays_fail: bool = True) -> list[VariantSweep]:
    """Sweep each setup, its progress on stderr: a bar on a terminal, a line every few seconds elsewhere.

    The count is of scenarios, over every worker, against the estimate the sweep makes before its
    restarts run (meant to err low: a count that passes it raises it).
    """
    with progress("sweep", "scenarios") as shown:
        return sweep_all(setups, spec, depth, share, workers, scheduler, shown.advance, repeat, strays_fail,
                         max_scenarios=max_scenarios, expect=shown.expect)


def every_scenario(sweeps: list[VariantSweep]) -> Iterator[ScenarioResult]:
    """Each sweep's scenarios in turn, made one at a time: a deep sweep's millions are never all held."""
    return (result for s in sweeps for result in s.scenarios())


def replay_command(job_spec: str, loop: str | None, effects_file: str | None,
                   tracker: str | None, repeat: int = 1, scheduled: bool = False,
                   commands: tuple[str, ...] = (), fs_points: bool = False) -> Callable[[str], str]:
    """The command that replays a scenario of this sweep, and tells its story (as often as the sweep ran it)."""
    if commands:
        options = " ".join(f"--command {shlex.quote(c)}" for c in commands)
        named = click.get_current_context().get_parameter_source("job_spec") is not click.core.ParameterSource.DEFAULT
        options += f" --job {shlex.quote(job_spec)}" if named else ""
        options += f" --effects {shlex.quote(effects_file)}" if effects_file is not None else ""
        options += f" --tracker {shlex.quote(tracker)}" if tracker is not None else ""
        options += " --fs-points" if fs_points else ""
    elif loop is not None and effects_file is not None and ":" in loop:
        options = f"--loop {shlex.quote(loop)} --effects {shlex.quote(effects_file)}"
        options += f" --tracker {shlex.quote(tracker)}" if tracker is not None else ""
        options += " --scheduled" if scheduled else ""
    else:
        options = f"--job {shlex.quote(job_spec)}"
    options += f" --repeat {repeat}" if repeat > 1 else ""
    return lambda scenario: f"crashlab explain {scenario} {options}"


#: `sweep` of a loop of yours prints at most this many windows; `--list` names every scenario.
MAX_WINDOWS = 20


def echo_windows(scenarios: Callable[[], Iterable[ScenarioResult]], replay: Callable[[str], str]) -> None:
    """On stderr, after the table: the causes (what a death adds to the harm, wherever it falls), then each window
    of consecutive crash points with one failure, each with how to replay it."""
    found, found_causes = windows(scenarios()), causes(scenarios())
    if len(found_causes) < len(found):  # where each window is a cause of its own, the windows say it all
        click.echo(f"{len(found_causes)} cause{'s' if len(found_causes) != 1 else ''} (what a death adds to the harm "
                   "the deaths before it did; a scenario that fails by its earlier deaths alone counts where they "
                   "die):", err=True)
        for cause in found_causes[:MAX_WINDOWS]:
            click.echo(f"  {tell(cause, replay)}", err=True)
        if len(found_causes) > MAX_WINDOWS:
            click.echo(f"  … and {len(found_causes) - MAX_WINDOWS} more causes", err=True)
        click.echo("the windows (spans of crash points of one process, after the same deaths, that fail alike):",
                   err=True)
    for window in found[:MAX_WINDOWS]:
        click.echo(describe(window, replay), err=True)
    if len(found) > MAX_WINDOWS:
        click.echo(f"… and {len(found) - MAX_WINDOWS} more windows: --list dups (or missing, flaky) names every "
                   "scenario", err=True)


def echo_listing(scenarios: Iterable[ScenarioResult], listing: str, replay: Callable[[str], str], fmt: str) -> None:
    """`sweep --list KIND`: the scenarios whose outcome KIND picks, each with the command that explains it."""
    chosen = [r for r in scenarios if LISTS[listing](r.outcome)]
    commands = [replay(r.id) for r in chosen]
    if fmt == "table":
        lines = [[r.id, " then ".join(r.points) or "-", command] for r, command in zip(chosen, commands, strict=True)]
        click.echo(tables.grid(lines) if lines else f"no scenario with {listing}")
    else:
        data = [{"id": r.id, "first_crash": r.points[0] if r.points else None, "crashes": " then ".join(r.points),
                 "command": c} for r, c in zip(chosen, commands, strict=True)]
        text = json.dumps(data, indent=2) if fmt == "json" else \
            tables.csv_text(data, ["id", "first_crash", "crashes", "command"])
        click.echo(text.rstrip("\n"))


def serves(spec: RunnerSpec, setup: Setup) -> bool:
    """Whether the faults of `setup` have a form for its loop, whose tools call crashlab's service."""
    try:
        spec.check(setup)
    except BadInput:
        return False
    return True


def every_fault(variants: list[Variant], job: Job, spec: RunnerSpec, depth: int, fmt: str, out: str | None,
                workers: int, scheduler: str | None, max_scenarios: int) -> None:
    """`sweep --fault all`: each fault at each of its settings, a table each, then the matrix of worst outcomes."""
    check_handles(job, variants)
    settings = every_setting()
    if any(v.calls_service for v in variants):  # a loop that calls the service: the faults that reach it (the
        # power cut of its run directory, which needs FUSE, only by name: `make sweep` runs anywhere)
        settings = [faults for faults in settings
                    if all(serves(spec, Setup(v, job, faults)) for v in variants) and not faults.cuts]
    for faults in settings:
        for variant in variants:
            spec.check(Setup(variant, job, faults))
    pending = PendingResults(out) if out is not None else None
    try:
        records: list[dict[str, Any]] = []
        texts = []
        for faults in settings:
            began = time.perf_counter()
            sweeps = swept([Setup(v, job, faults) for v in variants], spec, depth, True, workers, scheduler,
                           max_scenarios)
            rows = [s.row() for s in sweeps]
            columns = columns_for(variants, depth, rows)
            click.echo(f"swept {faults.name}: {sum(r.scenarios for r in rows):,} scenarios in "
                       f"{time.perf_counter() - began:.1f} s", err=True)
            records += tables.records(rows, columns)
            said = [" + ".join(f.slug for f in faults.members) or "crash", *(f.said for f in faults.members if f.said)]
            texts.append(f"## {', '.join(said)}\n\n{tables.table(rows, columns)}")
        heads, cells = matrix.matrix(records)
        grid = tables.grid([[r["name"], *(matrix.text(r[c]) for c in heads)] for r in cells], ["name", *heads],
                           "github")
        text = "\n\n".join([*texts, f"## the worst outcome of each fault\n\n{grid}"])
        if pending is not None:
            pending.put(lambda into: matrix.write(into, job, records, heads, cells, text), matrix.FILES)
    finally:
        if pending is not None:
            pending.discard()
    if fmt == "table":
        click.echo(text)
    elif fmt == "json":
        click.echo(json.dumps({"faults": records, "matrix": cells}, indent=2))
    else:
        flat = [{k: v for k, v in r.items() if k != "by_depth"} for r in records]
        click.echo(tables.csv_text(flat, list(flat[0])).rstrip("\n"))
    if out is not None:
        click.echo(f"wrote every fault's rows, the matrix and its picture to {out}/", err=True)

