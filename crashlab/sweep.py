"""The sweep: crash a loop at every point it reaches, and at every point its restart reaches too.

Scenario ``SLUG:I`` crashes the first process at its I-th crash point, then lets a restart finish.
Scenario ``SLUG:I:J`` also crashes that restart at its J-th point, and a third process finishes.
Every count is read from the world after the scenario has run; nothing is computed by formula.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from .agent import AgentVariant
from .designs import DESIGNS
from .job import Job
from .points import Crash, Recorder
from .store import FileStore, MemoryStore, Store
from .world import TRACKER_MODES, World


class Variant(Protocol):
    """A loop design under test: how to build one process of it, and what tracker it talks to."""

    slug: str
    name: str
    tracker_mode: str

    def loop(self, job: Job, world: World, store: Store, points: Recorder): ...

    def refuses(self, job: Job) -> str | None:
        """Why this variant cannot run `job`, or None when it can."""


StoreFactory = Callable[[Recorder], Store]

#: The agent's own loop, once per kind of tracker.
AGENTS: dict[str, AgentVariant] = {v.slug: v for v in map(AgentVariant, TRACKER_MODES)}
#: Every variant a scenario ID can name: the five designs, then the agent's loop.
VARIANTS: dict[str, Variant] = {**DESIGNS, **AGENTS}


@dataclass(frozen=True)
class Outcome:
    """What a scenario did to the world, against what the job should have done exactly once."""

    dups: dict[str, int]  # call ID -> extra copies in the tracker
    missing: tuple[str, ...]  # changing calls with no record at all
    asks: int  # "did it happen?" questions to the person, over all processes
    calls_plus: int  # model calls beyond those of the uninterrupted run
    approvals: int  # approval decisions asked of the person, over all processes

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

    @property
    def id(self) -> str:
        return ":".join([self.variant.slug, *map(str, self.crashes)])

    def passed(self, process: int) -> int:
        """How many crash points process `process` (1-based) passed, the crash point included."""
        return sum(1 for e in self.points.events if e.kind == "point" and e.process == process)

    def outcome(self, job: Job, baseline_calls: int) -> Outcome:
        dups, missing = {}, []
        for call in job.changing_calls:
            copies = len(self.world.tracker.made_by(call.id))
            if copies > 1:
                dups[call.id] = copies - 1
            elif copies == 0:
                missing.append(call.id)
        person = self.world.person
        return Outcome(dups, tuple(missing), person.asks, self.world.model.calls - baseline_calls, person.approvals)


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
            asks=sum(o.asks for o in outcomes),
            calls_plus=sum(o.calls_plus for o in outcomes),
            approvals=sum(o.approvals for o in outcomes),
        )


def run_scenario(variant: Variant, job: Job, crashes: tuple[int, ...], store: StoreFactory) -> ScenarioRun:
    """Run processes over one fresh world and store until one finishes the job.

    Process k dies at its ``crashes[k-1]``-th point; the process after the last crash runs to the end.
    """
    points = Recorder(crashes)
    world = World.new(job, points, variant.tracker_mode)
    durable = store(points)
    for _ in range(len(crashes) + 1):
        points.start_process()
        try:
            variant.loop(job, world, durable, points).run()
            break
        except Crash:
            continue
    return ScenarioRun(variant, crashes, points, world, durable)


def sweep_variant(
    variant: Variant, job: Job, store: StoreFactory, advance: Callable[[int], None] = lambda n: None
) -> VariantSweep:
    """The uninterrupted run, then every single crash and every double crash it leads to."""
    baseline = run_scenario(variant, job, (), store)
    calls = baseline.world.model.calls
    results = []

    def keep(run: ScenarioRun) -> None:
        events = run.points.events
        results.append(ScenarioResult(
            id=run.id,
            variant=variant.slug,
            crashes=run.crashes,
            labels=tuple(e.label for e in events if e.kind == "crash"),
            outcome=run.outcome(job, calls),
            hits=sum(1 for e in events if e.kind == "point"),
            saves=sum(1 for e in events if e.kind == "save"),
        ))

    n = baseline.passed(1)
    for i in range(1, n + 1):
        single = run_scenario(variant, job, (i,), store)
        keep(single)
        for j in range(1, single.passed(2) + 1):
            keep(run_scenario(variant, job, (i, j), store))
        advance(1)
    return VariantSweep(variant, n, tuple(results))


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
    not the disk. The chapter's sweep ran with syncs off, and so does this one by default.
    """
    shm = Path("/dev/shm")
    root = Path(tempfile.mkdtemp(prefix="crashlab-", dir=shm if shm.is_dir() else None))
    try:
        yield lambda points: FileStore(tempfile.mkdtemp(dir=root), points, fsync=fsync)
    finally:
        shutil.rmtree(root, ignore_errors=True)
