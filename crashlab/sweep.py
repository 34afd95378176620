"""The sweep: crash a loop at every point it reaches, and at every point its restart reaches too.

Scenario ``SLUG:I`` crashes the first process at its I-th crash point, then lets a restart finish.
Scenario ``SLUG:I:J`` also crashes that restart at its J-th point, and a third process finishes.
Every count is read from the world after the scenario has run; nothing is computed by formula.

A scenario is only counted when it is sound: every process meant to die died where it was told
and did nothing after, the last process finished the run, and each process retraced the run it
repeats up to its crash point. Anything else is a `HarnessError` that names the scenario: the
table of a loop that breaks these rules would be a table of fiction.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from .agent import AgentVariant
from .checkpoint import Checkpoint
from .designs import DESIGNS
from .job import Call, Job
from .points import Crash, HarnessError, Recorder, Where
from .store import FileStore, MemoryStore, Store
from .world import TRACKER_MODES, Record, World


class Variant(Protocol):
    """A loop design under test: how to build one process of it, and what tracker it talks to."""

    slug: str
    name: str
    tracker_mode: str
    desk: str

    def loop(self, job: Job, world: World, store: Store, points: Recorder): ...

    def refuses(self, job: Job) -> str | None:
        """Why this variant cannot run `job`, or None when it can."""


StoreFactory = Callable[[Recorder], Store]

#: The agent's own loop, once per kind of tracker.
AGENTS: dict[str, AgentVariant] = {v.slug: v for v in map(AgentVariant, TRACKER_MODES)}
#: Every variant a scenario ID can name: the five designs, then the agent's loop.
VARIANTS: dict[str, Variant] = {**DESIGNS, **AGENTS}

#: The crash points one process passed, in order, with where the loop was: what a repeat must retrace.
Trace = list[tuple[str, Where]]


def scenario_id(slug: str, crashes: tuple[int, ...]) -> str:
    return ":".join([slug, *map(str, crashes)])


@dataclass(frozen=True)
class Outcome:
    """What a scenario did to the world, against what the job should have done exactly once."""

    dups: dict[str, int]  # call ID -> extra copies in the tracker
    missing: tuple[str, ...]  # changing calls with no record at all
    asks: int  # "did it happen?" questions to the person, over all processes
    calls_plus: int  # model calls beyond those of the uninterrupted run
    approvals: int  # approval questions put to the person, over all processes
    wrong: tuple[str, ...] = ()  # calls whose saved result, or whose comment, names a record the job did not mean

    @property
    def extra(self) -> int:
        return sum(self.dups.values())


@dataclass
class ScenarioRun:
    """One scenario, run: the recorder holds its story, the world and store its end state."""

    variant: Variant
    crashes: tuple[int, ...]
    points: Recorder
    world: World
    store: Store
    final: Checkpoint  # what the store held when the last process finished

    @property
    def id(self) -> str:
        return scenario_id(self.variant.slug, self.crashes)

    def passed(self, process: int) -> int:
        """How many crash points process `process` (1-based) passed, the crash point included."""
        return sum(1 for e in self.points.events if e.kind == "point" and e.process == process)

    def trace(self, process: int) -> Trace:
        return [(e.label, e.where) for e in self.points.points(process)]

    def outcome(self, job: Job, baseline_calls: int) -> Outcome:
        results = self.final.results()
        refused = {cid for turn in self.final.turns for cid, ok in turn.approvals.items() if not ok}
        dups, missing, wrong = {}, [], []
        for call in job.changing_calls:
            made = self.world.tracker.made_by(call.id)
            if len(made) > 1:
                dups[call.id] = len(made) - 1
            elif not made and call.id not in refused:
                missing.append(call.id)
            if not self._meant(call, made, results, call.id in refused):
                wrong.append(call.id)
        person = self.world.person
        return Outcome(
            dups, tuple(missing), person.asks, self.world.model.calls - baseline_calls, person.approvals, tuple(wrong)
        )

    def _meant(self, call: Call, made: list[Record], results: dict[str, Any], refused: bool) -> bool:
        """Whether the call's saved result names one of its own records, and its comments the issue meant."""
        result = results.get(call.id)
        if refused:
            ok = not made and isinstance(result, str)
        else:
            ok = result is None or result in {r.number for r in made}
        if call.tool == "comment":
            ref = call.ref
            intended = (
                {r.number for r in self.world.tracker.made_by(ref) if r.kind == "issue"} if ref else {call.args["issue"]}
            )
            ok = ok and all(r.issue in intended for r in made)
        return ok


def run_scenario(variant: Variant, job: Job, crashes: tuple[int, ...], store: StoreFactory) -> ScenarioRun:
    """Run processes over one fresh world and store until one finishes the job, and check the run.

    Process k dies at its ``crashes[k-1]``-th point; the process after the last crash runs to the end.
    """
    points = Recorder(crashes, scenario_id(variant.slug, crashes))
    world = World.new(job, points, variant.tracker_mode, desk=variant.desk)
    durable = store(points)
    for _ in range(len(crashes) + 1):
        points.start_process()
        try:
            variant.loop(job, world, durable, points).run()
            returned = True
        except Crash:
            returned = False
        check_death(points, returned)
        if points.dead is None:
            break
    return ScenarioRun(variant, crashes, points, world, durable, check_finished(points, durable))


def check_death(points: Recorder, returned: bool) -> None:
    """The process died where it was told and did nothing after, or it was not told to die."""
    where = f"{points.scenario}: process {points.process}"
    if points.violations:
        raise HarnessError(points.violations[0])
    if points.dead is None and not returned:
        raise HarnessError(f"{where} raised Crash without reaching a crash point of its own")
    if points.dead is not None and returned:
        raise HarnessError(
            f"{where} died at its point {points.dead.index} ({points.dead.label}) but its loop returned: "
            "it caught its own Crash (a bare except, or except BaseException)"
        )
    if points.dead is None and points.process <= len(points.crash_at):
        raise HarnessError(
            f"{where} finished after {points.passed} crash points and never reached its crash point "
            f"{points.crash_at[points.process - 1]}"
        )


def check_finished(points: Recorder, store: Store) -> Checkpoint:
    """The finished checkpoint the last process left durable; anything else fails the scenario."""
    final = store.read()
    if final is None or not final.finished:
        found = final.summary() if final else "nothing"
        raise HarnessError(
            f"{points.scenario}: process {points.process} returned, but the run is not finished "
            f"(the durable checkpoint: {found})"
        )
    return final


def check_retrace(run: ScenarioRun, process: int, expected: Trace, of: str) -> None:
    """A process repeats what it repeats: up to its crash, its points are those of the run it retraces."""
    got = run.trace(process)
    if got == expected[: len(got)]:
        return
    k = next((k for k, (a, b) in enumerate(zip(got, expected)) if a != b), min(len(got), len(expected)))
    saw = f"{got[k][0]!r} ({got[k][1]})" if k < len(got) else "nothing more"
    meant = f"{expected[k][0]!r} ({expected[k][1]})" if k < len(expected) else "nothing more"
    raise HarnessError(
        f"{run.id}: the loop is not deterministic: process {process} passed {saw} at its point {k + 1}, "
        f"where {of} passed {meant}"
    )


@dataclass(frozen=True)
class ScenarioResult:
    """The part of a run the sweep keeps: its ID, where it crashed, and its outcome."""

    id: str
    variant: str
    crashes: tuple[int, ...]
    labels: tuple[str, ...]
    outcome: Outcome
    hits: int  # crash points passed, over all processes
    saves: int  # checkpoint saves begun, over all processes


@dataclass(frozen=True)
class Row:
    """One line of the table: a variant's counts, summed over its single and double crashes."""

    variant: str
    name: str
    once: int
    twice: int
    with_dups: int
    dups: int
    missing: int
    wrong: int
    asks: int
    calls_plus: int
    approvals: int

    @property
    def points(self) -> int:
        """The agent table's name for `once`: the crash points of the uninterrupted run."""
        return self.once

    @property
    def scenarios(self) -> int:
        return self.once + self.twice


@dataclass(frozen=True)
class VariantSweep:
    variant: Variant
    points: int
    scenarios: tuple[ScenarioResult, ...]

    def row(self) -> Row:
        outcomes = [s.outcome for s in self.scenarios]
        return Row(
            variant=self.variant.slug,
            name=self.variant.name,
            once=self.points,
            twice=sum(1 for s in self.scenarios if len(s.crashes) == 2),
            with_dups=sum(1 for o in outcomes if o.extra),
            dups=sum(o.extra for o in outcomes),
            missing=sum(len(o.missing) for o in outcomes),
            wrong=sum(len(o.wrong) for o in outcomes),
            asks=sum(o.asks for o in outcomes),
            calls_plus=sum(o.calls_plus for o in outcomes),
            approvals=sum(o.approvals for o in outcomes),
        )


@dataclass
class Plan:
    """A variant's uninterrupted run and its single crashes, run: what the double crashes start from.

    Running the single crashes first tells how many scenarios the sweep has (`total`) before the
    bulk of the work, so progress can count scenarios, not first-crash points of unequal cost.
    """

    variant: Variant
    job: Job
    store: StoreFactory
    baseline_calls: int
    baseline: Trace
    singles: list[ScenarioResult] = field(default_factory=list)
    restarts: list[Trace] = field(default_factory=list)  # after single crash i, what its restart passed

    @property
    def total(self) -> int:
        return len(self.baseline) + sum(map(len, self.restarts))

    def result(self, run: ScenarioRun) -> ScenarioResult:
        events = run.points.events
        return ScenarioResult(
            id=run.id,
            variant=self.variant.slug,
            crashes=run.crashes,
            labels=tuple(e.label for e in events if e.kind == "crash"),
            outcome=run.outcome(self.job, self.baseline_calls),
            hits=sum(1 for e in events if e.kind == "point"),
            saves=sum(1 for e in events if e.kind == "save"),
        )


def plan(variant: Variant, job: Job, store: StoreFactory) -> Plan:
    """The uninterrupted run (twice, to see that it repeats), then every single crash."""
    first, again = (run_scenario(variant, job, (), store) for _ in range(2))
    check_retrace(again, 1, first.trace(1), "the first uninterrupted run")
    sweep = Plan(variant, job, store, first.world.model.calls, first.trace(1))
    for i in range(1, len(sweep.baseline) + 1):
        single = run_scenario(variant, job, (i,), store)
        check_retrace(single, 1, sweep.baseline, "the uninterrupted run")
        sweep.singles.append(sweep.result(single))
        sweep.restarts.append(single.trace(2))
    return sweep


def finish(sweep: Plan, advance: Callable[[int], None] = lambda n: None) -> VariantSweep:
    """Every double crash the single crashes lead to, and the variant's sweep, whole."""
    results = []
    for i, (single, restart) in enumerate(zip(sweep.singles, sweep.restarts), start=1):
        results.append(single)
        advance(1)
        for j in range(1, len(restart) + 1):
            double = run_scenario(sweep.variant, sweep.job, (i, j), sweep.store)
            check_retrace(double, 1, sweep.baseline, "the uninterrupted run")
            check_retrace(double, 2, restart, f"the restart of {single.id}")
            results.append(sweep.result(double))
            advance(1)
    return VariantSweep(sweep.variant, len(sweep.baseline), tuple(results))


def sweep_variant(
    variant: Variant, job: Job, store: StoreFactory, advance: Callable[[int], None] = lambda n: None
) -> VariantSweep:
    """The uninterrupted run, then every single crash and every double crash it leads to."""
    return finish(plan(variant, job, store), advance)


def memory_stores() -> StoreFactory:
    return MemoryStore


@contextmanager
def stores(kind: str) -> Iterator[StoreFactory]:
    """A factory of fresh stores of `kind` ("memory" or "files"), for as long as the block runs."""
    if kind == "files":
        with file_stores() as factory:
            yield factory
    else:
        yield memory_stores()


@contextmanager
def file_stores(fsync: bool = False) -> Iterator[StoreFactory]:
    """A factory of file stores, each in a fresh directory under one temporary root.

    The root is on the RAM-backed /dev/shm when the machine has one: the sweep measures the loop,
    not the disk. The chapter's sweep ran with syncs off, and so does this one by default. Each new
    store removes the directory of the one before, so the root holds one scenario at a time: a
    store is valid until the next one is made, which is all a sweep needs.
    """
    shm = Path("/dev/shm")
    root = Path(tempfile.mkdtemp(prefix="crashlab-", dir=shm if shm.is_dir() else None))
    previous: list[str] = []

    def fresh(points: Recorder) -> FileStore:
        for directory in previous:
            shutil.rmtree(directory, ignore_errors=True)
        previous[:] = [tempfile.mkdtemp(dir=root)]
        return FileStore(previous[0], points, fsync=fsync)

    try:
        yield fresh
    finally:
        shutil.rmtree(root, ignore_errors=True)

