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
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, fields, replace
from itertools import zip_longest
from operator import attrgetter
from pathlib import Path
from typing import Any, Protocol

from crashlab.durable.checkpoint import Checkpoint, CheckpointError
from crashlab.durable.state import Durable
from crashlab.durable.store import FileStore, MemoryStore, Store
from crashlab.engine.points import Crash, HarnessError, Recorder, Where
from crashlab.job import Call, Job
from crashlab.loops.agent import AgentVariant
from crashlab.loops.designs import BEYOND_THE_BOOK, DESIGNS
from crashlab.world import TRACKER_MODES, Delivery, Record, World, WorldState, intended


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
#: Every variant a scenario ID can name: the five designs and those beyond the book, then the agent's loop.
VARIANTS: dict[str, Variant] = {**DESIGNS, **BEYOND_THE_BOOK, **AGENTS}

#: The crash points one process passed, in order, with where the loop was: what a repeat must retrace.
Trace = list[tuple[str, Where]]


@dataclass(frozen=True)
class Faults:
    """What breaks in a scenario beyond the chapter's crash (see `crashlab.faults`); nothing, by default."""

    wrong_at: int = 0  # the person's question (1-based, over the scenario) answered wrong; 0 for none
    power_cut: bool = False  # each death is a power cut: the disk keeps only what the store's syncs made durable
    reused_run_id: bool = False  # an earlier run of the job, under the same run ID, has already run to the end
    drift: str = ""  # how the model answers a turn asked again (see `world.DRIFTS`); "" repeats the script
    commit: str = ""  # how the tracker makes a request durable (see `world.COMMITS`); "" it loses none
    downtimes: tuple[float, ...] = ()  # the hours a restart may come after its death: each a scenario of its own
    late: bool = False  # a changing request spends time on the wire: a death at ``sent`` leaves it to land later

    @property
    def chooses(self) -> bool:
        """Whether each death leaves one of several states, each a scenario of its own (``I~S`` in its ID)."""
        return self.power_cut or bool(self.downtimes) or self.late


NO_FAULTS = Faults()


def scenario_id(slug: str, crashes: tuple[int, ...], wrong_at: int = 0, choices: tuple[int, ...] = ()) -> str:
    """``SLUG:I:J``; a fault's choice extends it: ``I~S``, the S-th state a death at I allows (a power
    cut's disk state, a restart's downtime), and a final ``~K``, the K-th question answered wrong."""
    parts = [f"{i}~{d}" for i, d in zip(crashes, choices)] if choices else map(str, crashes)
    return ":".join([slug, *parts]) + (f"~{wrong_at}" if wrong_at else "")


@dataclass(frozen=True)
class Outcome:
    """What a scenario did to the world, against what the job should have done exactly once."""

    dups: dict[str, int]  # call ID -> extra copies in the tracker
    missing: tuple[str, ...]  # changing calls with no record at all
    asks: int  # "did it happen?" questions to the person, over all processes
    calls_plus: int  # model calls beyond those of the uninterrupted run
    approvals: int  # approval questions put to the person, over all processes
    wrong: tuple[str, ...] = ()  # calls whose saved result, or whose comment, names a record the job did not mean
    stuck: int = 0  # 1 when the run cannot go on without a person: its checkpoint is unreadable
    orphans: int = 0  # records in the tracker that no call of the job accounts for

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
    final: Checkpoint | None  # what the store held when the last process finished; None if it was stuck
    start: Durable | None = None  # what the last crash left: where the last process started
    stuck: str | None = None  # why the last process could not start: its checkpoint unreadable
    choices: tuple[int, ...] = ()  # a fault that chooses: which state each death left, from 1
    left: tuple[str, ...] = ()  # what each of those states was, as people read it

    @property
    def id(self) -> str:
        return scenario_id(self.variant.slug, self.crashes, self.world.person.wrong_at, self.choices)

    def passed(self, process: int) -> int:
        """How many crash points process `process` (1-based) passed, the crash point included."""
        return sum(1 for e in self.points.events if e.kind == "point" and e.process == process)

    def trace(self, process: int) -> Trace:
        return [(e.label, e.where) for e in self.points.points(process)]

    def outcome(self, job: Job, baseline_calls: int) -> Outcome:
        """The world's counts, against what the job means to do: each changing call's effect once, by
        whatever ID the model gave it (`world.intended`). A stuck run has made its duplicates, but what
        it has not done yet is not missing."""
        final = self.final
        turns = final.turns if final else ()
        results = {intended(cid): result for cid, result in final.results().items()} if final else {}
        refused = {intended(cid) for turn in turns for cid, ok in turn.approvals.items() if not ok}
        dups, missing, wrong = {}, [], []
        for call in job.changing_calls:
            made = self.world.made_by(call.id)
            if len(made) > 1:
                dups[call.id] = len(made) - 1
            elif not made and call.id not in refused and final:
                missing.append(call.id)
            if final and not self._meant(call, made, results, call.id in refused):
                wrong.append(call.id)
        person = self.world.person
        saved = {call.id for turn in turns or job.turns for call in turn.calls}  # the calls the run ended with
        orphans = sum(1 for r in self.world.tracker.records[self.world.earlier:] if r.call not in saved)
        calls_plus = self.world.model.calls - baseline_calls  # negative only for a stuck run, which stopped short
        return Outcome(dups, tuple(missing), person.asks, max(calls_plus, 0), person.approvals, tuple(wrong),
                       int(final is None), orphans)

    def result(self, job: Job, baseline_calls: int) -> ScenarioResult:
        """The scenario as a sweep keeps it, for a sweep that re-executes each."""
        labels = tuple(e.label for e in self.points.crashes())
        saves = sum(1 for e in self.points.events if e.kind == "save")
        return ScenarioResult(self.id, self.variant.slug, self.crashes, labels, self.outcome(job, baseline_calls),
                              len(self.points.points()), saves, self.choices)

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
                {r.number for r in self.world.made_by(ref) if r.kind == "issue"} if ref else {call.args["issue"]}
            )
            ok = ok and all(r.issue in intended for r in made)
        return ok


class NoSuchChoice(ValueError):
    """A scenario names a state (a disk state, a downtime) that its death does not allow."""


def run_scenario(variant: Variant, job: Job, crashes: tuple[int, ...], store: StoreFactory,
                 faults: Faults = NO_FAULTS, choices: tuple[int, ...] = ()) -> ScenarioRun:
    """Run processes over one fresh world and store until one finishes the job, and check the run.

    Process k dies at its ``crashes[k-1]``-th point; the process after the last crash runs to the end.
    Under a fault that chooses, the k-th death leaves the ``choices[k-1]``-th state the fault allows:
    the disk state a power cut leaves, the downtime before the restart, or where in the restart the
    request the death left in flight lands.
    """
    if faults.chooses and len(choices) != len(crashes):
        raise ValueError("a scenario under a fault that chooses names a choice for every crash")
    if faults.late and len(crashes) > 1:
        raise ValueError("a late delivery lands in the restart of a scenario's only crash")
    points = Recorder(crashes, scenario_id(variant.slug, crashes, faults.wrong_at, choices))
    world = new_world(variant, job, store, points, faults)
    durable = store(points)
    start, stuck, left, late = None, None, [], None
    for k in range(len(crashes) + 1):
        points.start_process()
        returned, stuck = _life(variant.loop(job, world, durable, points))
        check_death(points, returned, stuck)
        if points.dead is None:
            if late is not None:
                late.after_the_end()
            break
        if faults.power_cut:
            durable, what = _power_cut(durable, store(points), choices[k], points)
            left.append(f"the power cut left {what}")
        start = Durable.of(world, durable)
        if faults.commit:  # the tracker died too, and restarts from what it made durable
            left.append(_tracker_lost(world, start.world))
            world = World.restore(start.world, job, points)
        if faults.downtimes:
            world.clock.hours += _chosen(faults.downtimes, choices[k], points)
            left.append(f"it starts {world.clock.hours - start.world.hours:g} h after the death: "
                        f"the world's clock reads {world.clock.hours:g} h")
        if faults.late:
            late = Landing.of(world, points, choices[k])
    if late is not None:
        left.append(late.what())
    final = None if stuck else check_finished(points, durable)
    return ScenarioRun(variant, crashes, points, world, durable, final, start, stuck, choices, tuple(left))


@dataclass
class Landing:
    """The request a death left in flight, landing at the restart's `at`-th crash point, or just after
    the restart finished: at its last point plus one (the fault `late-delivery`)."""

    world: World
    points: Recorder
    delivery: Delivery
    at: int
    landed: bool = False

    @classmethod
    def of(cls, world: World, points: Recorder, at: int) -> Landing:
        """The request in flight at the death of `points`' process, to land at its restart's point `at`."""
        delivery, world.in_flight = world.in_flight, None
        if delivery is None:
            raise NoSuchChoice(f"{points.scenario}: process {points.process} died at its point {points.dead.index} "
                               f"({points.dead.label}) with no request in flight; under late-delivery a crash is at "
                               "a 'sent' point")
        landing = cls(world, points, delivery, at)
        points.watch = landing.reached
        return landing

    def what(self) -> str:
        """Where it landed, as people read it."""
        where = f"at this process's point {self.at}" if self.at <= self.points.passed else "after this process ends"
        call = self.delivery.call
        return f"the request of {call.id} ({call.tool}) that the dead process sent was in flight: it lands {where}"

    def reached(self) -> None:
        """The restart is at a crash point: the request lands if this is its point."""
        if self.points.passed == self.at:
            self.land()

    def after_the_end(self) -> None:
        """The restart has finished: the request lands now if it was to land after the restart's last point."""
        if self.landed:
            return
        if self.at != self.points.passed + 1:
            raise NoSuchChoice(f"{self.points.scenario}: the restart passes {self.points.passed} crash points, so a "
                               f"late request lands at one of them or after the last (~1 to ~{self.points.passed + 1})")
        self.land()

    def land(self) -> None:
        self.world.tracker.land(self.delivery)
        self.landed = True


def new_world(variant: Variant, job: Job, store: StoreFactory, points: Recorder, faults: Faults) -> World:
    """The world a scenario's first process meets: a fresh one, or under `reused-run-id` the one an
    earlier run of the same job left, with the same run ID (which the agent's loop does not reuse).

    The earlier run is process 0, uninterrupted, with a store of its own: only its records remain,
    and the person knows them for an earlier run's. The questions, model calls and server deaths
    that count are this run's.
    """
    if not faults.reused_run_id:
        return World.new(job, points, variant.tracker_mode, desk=variant.desk, wrong_at=faults.wrong_at,
                         drift=faults.drift, commit=faults.commit, late=faults.late)
    before = Recorder((), f"{points.scenario}, the earlier run", process=-1)
    world = World.new(job, before, variant.tracker_mode, desk=variant.desk)
    before.start_process()
    variant.loop(job, world, store(before), before).run()
    left = replace(world.state(), asks=0, approvals=0, model_calls=0, asked=(), servers_died=(),
                   earlier=len(world.tracker.records))
    return World.restore(left, job, points)


def _life(loop: Any) -> tuple[bool, str | None]:
    """Run one process: whether it returned, and why it could not start if its checkpoint was unreadable."""
    try:
        loop.run()
        return True, None
    except Crash:
        return False, None
    except CheckpointError as error:
        return False, str(error)


def _power_cut(old: Store, new: Store, state: int, points: Recorder) -> tuple[Store, str]:
    """The store a restart after a power cut finds: the `state`-th of those `old`'s disk allows."""
    what, files = _chosen(old.survivors(), state, points, "disk states")
    new.restore(files)
    return new, what.what


def _tracker_lost(world: World, left: WorldState) -> str:
    """What the tracker of `world` loses when it dies and restarts from `left`, as people read it."""
    tracker, kept = world.tracker, len(left.records)
    gone = tracker.keys().keys() - dict(left.keys).keys()
    lost = [f"{r.kind} #{r.number} ({r.call})" for r in tracker.records[kept:]]
    lost += [f"the key of {r.call}" for r in tracker.records[:kept] if r.key in gone]
    if not lost:
        return "the tracker had made every request durable"
    return f"the tracker lost {', '.join(lost)}: not yet durable"


def _chosen(allowed: Sequence[Any], choice: int, points: Recorder, what: str = "downtimes") -> Any:
    """The `choice`-th (from 1) of the states the death of `points`' process allows."""
    if not 1 <= choice <= len(allowed):
        raise NoSuchChoice(f"{points.scenario}: the death at process {points.process}'s point {points.dead.index} "
                           f"leaves {len(allowed)} {what} (~1 to ~{len(allowed)})")
    return allowed[choice - 1]


def check_death(points: Recorder, returned: bool, stuck: str | None = None) -> None:
    """The process died where it was told and did nothing after, or it was not told to die, or it was stuck."""
    where = f"{points.scenario}: process {points.process}"
    if points.violations:
        raise HarnessError(points.violations[0])
    if stuck is not None:
        if points.process <= len(points.crash_at):
            raise HarnessError(f"{where} could not start, so it cannot crash at its point "
                               f"{points.crash_at[points.process - 1]}: {stuck}")
        if points.passed:
            raise HarnessError(f"{where} read an unreadable checkpoint after {points.passed} crash points: {stuck}")
        return
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
    choices: tuple[int, ...] = ()  # a fault that chooses: the state each crash left, from 1


@dataclass(frozen=True)
class Tally:
    """Sums over a set of scenarios: what a row shows, and the crash-point hits and saves they took."""

    by_depth: tuple[int, ...] = ()  # scenarios by number of crashes: one crash first
    with_dups: int = 0
    dups: int = 0
    missing: int = 0
    wrong: int = 0
    asks: int = 0
    calls_plus: int = 0
    approvals: int = 0
    stuck: int = 0
    orphans: int = 0
    hits: int = 0
    saves: int = 0

    @classmethod
    def of(cls, outcome: Outcome, hits: int, saves: int) -> Tally:
        """One scenario, counted as the row counts it."""
        o = outcome
        return cls((1,), int(o.extra > 0), o.extra, len(o.missing), len(o.wrong), o.asks, o.calls_plus,
                   o.approvals, o.stuck, o.orphans, hits, saves)

    @property
    def scenarios(self) -> int:
        return sum(self.by_depth)

    def sums(self) -> tuple[int, ...]:
        """Every count but `by_depth`, in field order."""
        return _sums(self)

    def __add__(self, other: Tally) -> Tally:
        depths = tuple(map(sum, zip_longest(self.by_depth, other.by_depth, fillvalue=0)))
        return Tally(depths, *map(int.__add__, self.sums(), other.sums()))

    def behind(self, hits: int, saves: int) -> Tally:
        """These scenarios, each behind one more crash, of a process that took `hits` points and `saves` saves."""
        n = self.scenarios
        *counts, own_hits, own_saves = self.sums()
        return Tally((0, *self.by_depth), *counts, own_hits + n * hits, own_saves + n * saves)


_sums = attrgetter(*(f.name for f in fields(Tally)[1:]))


@dataclass(frozen=True, eq=False)
class Life:
    """One process's life, from the state its predecessor's death left to the finished run.

    A life is also a scenario: the one whose crashes led to it, and which ends when it finishes.
    `after[c]` is the life that follows its crash `forks[c]`, a crash at its j-th point that left
    the s-th state its fault allows (``(j, 0)``, one state, but for a fault that chooses), for as long
    as the sweep's depth allows: the sweep is a tree of lives, rooted in the uninterrupted run. When
    equal states share one life, the tree is a DAG; every path through it is still a scenario of its own.
    """

    state: bytes  # the fingerprint of the durable state it started from; b"" for the first process
    outcome: Outcome
    hits: int  # crash points it passed
    saves: int  # saves it began
    labels: tuple[str, ...]  # its crash points, in order
    saves_by: tuple[int, ...]  # saves begun up to each of its points, that point's own included
    forks: tuple[tuple[int, int], ...]  # (point, choice) of each crash that `after` follows
    after: tuple[Life, ...]
    below: Tally  # every scenario that crashes this life, and the lives after it
    tally: Tally  # this life's own scenario, and every one below it


def life_of(run: ScenarioRun, job: Job, state: bytes, baseline_calls: int, after: tuple[Life, ...],
            forks: tuple[tuple[int, int], ...] | None = None) -> Life:
    """The last process of `run`, as a life, with the lives its crashes (by default, at point 1, 2, ...) lead to."""
    process, labels, saves_by, saves = run.points.process, [], [], 0
    for e in run.points.events:
        if e.process != process:
            continue
        if e.kind == "save":
            saves += 1
        elif e.kind == "point":
            labels.append(e.label)
            saves_by.append(saves)
    forks = tuple((j, 0) for j in range(1, len(after) + 1)) if forks is None else forks
    below = sum((life.tally.behind(j, saves_by[j - 1]) for (j, _), life in zip(forks, after)), Tally())
    outcome = run.outcome(job, baseline_calls)
    tally = Tally.of(outcome, len(labels), saves) + below
    return Life(state, outcome, len(labels), saves, tuple(labels), tuple(saves_by), forks, after, below, tally)


Advance = Callable[[int], None]


def _ignore(n: int) -> None:
    pass


def live(variant: Variant, job: Job, store: StoreFactory, start: Durable | None, crashes: tuple[int, ...],
         watch: bool, faults: Faults = NO_FAULTS) -> tuple[ScenarioRun, list[list[Durable]]]:
    """One process from `start` (nothing, for the first) to the end, with the states at each point if `watch`.

    At each point, the states a death there can leave: the one a crash leaves, under a power cut
    every one the disk allows, newest first, and under `downtimes` the world after each downtime.
    The process is number ``len(crashes) + 1``, as it is in the scenario `crashes`, and nothing of
    its predecessors runs: they are in `start`.
    """
    states: list[list[Durable]] = []
    points = Recorder((), scenario_id(variant.slug, crashes), process=len(crashes))
    world = new_world(variant, job, store, points, faults) if start is None else None
    durable = store(points)
    world = world or start.restore(job, points, durable)

    def snapshot() -> None:
        if faults.power_cut:
            left = world.state()
            states.append([Durable(files, left) for _, files in durable.survivors()])
        elif faults.downtimes:
            files, now = durable.files(), world.state()
            states.append([Durable(files, replace(now, hours=now.hours + h)) for h in faults.downtimes])
        else:
            states.append([Durable.of(world, durable)])

    if watch:
        points.watch = snapshot
    points.start_process()
    returned, stuck = _life(variant.loop(job, world, durable, points))
    check_death(points, returned, stuck)
    final = None if stuck else check_finished(points, durable)
    return ScenarioRun(variant, crashes, points, world, durable, final, start, stuck), states


#: How one scenario's processes run, one after another over one world and store: `run_scenario`
#: here, each crash an exception; `crashlab.runners.forked.run_scenario` forks each and SIGKILLs it at its point.
ScenarioRunner = Callable[[Variant, Job, tuple[int, ...], StoreFactory], ScenarioRun]


@dataclass(frozen=True)
class Branch:
    """Where the subtree of one first crash begins: a unit of work that needs nothing else of the sweep.

    A shared sweep starts it from `state`, the snapshot the crash left; a replayed one re-executes
    the scenario `crashes` and checks that its first process retraces `traces[0]`. Both are plain
    values, so a branch can be grown in another process or on another machine.
    """

    variant: Variant
    job: Job
    depth: int
    baseline_calls: int
    crashes: tuple[int, ...]
    state: Durable | None  # shared: what the crash left
    traces: tuple[Trace, ...]  # replayed: what each process before the last retraces
    runner: ScenarioRunner = run_scenario  # replayed: how each scenario's processes run
    faults: Faults = NO_FAULTS  # shared: what breaks besides
    choice: int = 0  # shared, under a fault that chooses: which of the states it allows the crash left

    @property
    def fork(self) -> tuple[int, int]:
        """The crash that begins the branch, as `Life.forks` holds it."""
        return self.crashes[0], self.choice

    def grow(self, store: StoreFactory, advance: Advance = _ignore, memo: dict | None = None) -> Life:
        """The branch's tree of lives; `memo` may be shared with other branches of the same variant."""
        if self.state is None:
            return self._replayed(self.crashes, list(self.traces), store, advance)
        return self._shared(self.state, self.crashes, store, advance, {} if memo is None else memo)

    def _shared(self, start: Durable, crashes: tuple[int, ...], store: StoreFactory, advance: Advance,
                memo: dict[tuple[bytes, int], Life]) -> Life:
        key = (start.fingerprint(), len(crashes))
        if (known := memo.get(key)) is not None:
            advance(known.tally.scenarios)
            return known
        run, states = live(self.variant, self.job, store, start, crashes, len(crashes) < self.depth, self.faults)
        advance(1)
        crashed = deaths(states, self.faults)
        after = tuple(self._shared(left, (*crashes, j), store, advance, memo) for (j, _), left in crashed)
        forks = tuple(fork for fork, _ in crashed)
        memo[key] = life = life_of(run, self.job, key[0], self.baseline_calls, after, forks)
        return life

    def _replayed(self, crashes: tuple[int, ...], traces: list[Trace], store: StoreFactory, advance: Advance) -> Life:
        run = self.runner(self.variant, self.job, crashes, store)
        for process, trace in enumerate(traces, start=1):
            of = f"the restart of {scenario_id(self.variant.slug, crashes[:process - 1])}" if process > 1 else None
            check_retrace(run, process, trace, of or "the uninterrupted run")
        advance(1)
        mine = run.trace(len(crashes) + 1)
        deeper = range(1, len(mine) + 1) if len(crashes) < self.depth else ()
        after = tuple(self._replayed((*crashes, j), [*traces, mine], store, advance) for j in deeper)
        return life_of(run, self.job, run.start.fingerprint(), self.baseline_calls, after)


@dataclass
class Trunk:
    """A variant's uninterrupted run, and the branches of its first crashes: the sweep before the bulk of it."""

    variant: Variant
    job: Job
    run: ScenarioRun
    branches: list[Branch]

    def join(self, lives: Sequence[Life]) -> VariantSweep:
        """The whole sweep, from each branch's tree in the order of its first crash."""
        forks = tuple(b.fork for b in self.branches)
        return VariantSweep(self.variant, life_of(self.run, self.job, b"", self.run.world.model.calls, tuple(lives),
                                                  forks))


def deaths(states: list[list[Durable]], faults: Faults) -> list[tuple[tuple[int, int], Durable]]:
    """The crashes a life's states allow, each as its `Life.forks` entry and what it left: one per
    point, or under a fault that chooses one per state it allows (numbered from 1)."""
    return [((j, s if faults.chooses else 0), state) for j, left in enumerate(states, start=1)
            for s, state in enumerate(left, start=1)]


def trunk(variant: Variant, job: Job, store: StoreFactory, depth: int = 2, share: bool = True,
          runner: ScenarioRunner = run_scenario, faults: Faults = NO_FAULTS) -> Trunk:
    """The uninterrupted run, twice, to see that it repeats, and a branch per crash it allows.

    Shared, the second run snapshots the durable state at each point as it passes it; replayed,
    each branch will re-execute its crash from nothing, with `runner`. Only a process of this one
    can be snapshotted, so sharing runs in process, and so does every fault but the crash.
    """
    if share and runner is not run_scenario:
        raise ValueError("a shared sweep runs in process: re-execute (share=False) to run scenarios otherwise")
    if faults != NO_FAULTS and not share:
        raise ValueError("a fault beyond the crash is swept shared, in process")
    if faults.late:
        raise ValueError("a late delivery changes what the restart does where it lands: see faults.late_deliveries")
    if share:  # the faults are in the world (a wrong answer) and the store (its syncs): every snapshot keeps them
        first = run_scenario(variant, job, (), store, faults)
        run, states = live(variant, job, store, None, (), True, faults)
    else:
        first, run, states = runner(variant, job, (), store), runner(variant, job, (), store), []
    check_retrace(run, 1, first.trace(1), "the first uninterrupted run")
    baseline, calls = run.trace(1), run.world.model.calls
    if share:
        branches = [Branch(variant, job, depth, calls, (i,), left, (), faults=faults, choice=s)
                    for (i, s), left in deaths(states, faults)]
    else:
        branches = [Branch(variant, job, depth, calls, (i,), None, (baseline,), runner)
                    for i in range(1, len(baseline) + 1)]
    return Trunk(variant, job, run, branches)


@dataclass(frozen=True)
class Row:
    """One line of the table: a variant's counts, summed over every scenario up to the sweep's depth."""

    variant: str
    name: str
    by_depth: tuple[int, ...]  # scenarios by number of crashes, from one
    distinct: int  # distinct durable states the scenarios' last crashes left: the restarts that had to run
    with_dups: int
    dups: int
    missing: int
    wrong: int
    asks: int
    calls_plus: int
    approvals: int
    stuck: int = 0
    orphans: int = 0

    @property
    def once(self) -> int:
        return self.crashed(1)

    @property
    def twice(self) -> int:
        return self.crashed(2)

    @property
    def points(self) -> int:
        """The agent table's name for `once`: the crash points of the uninterrupted run."""
        return self.once

    @property
    def scenarios(self) -> int:
        return sum(self.by_depth)

    def crashed(self, k: int) -> int:
        """The scenarios with exactly `k` crashes (0 beyond the sweep's depth)."""
        return self.by_depth[k - 1] if k <= len(self.by_depth) else 0


@dataclass(frozen=True)
class VariantSweep:
    """A variant's sweep: the tree of its lives, rooted in the uninterrupted run."""

    variant: Variant
    root: Life

    @property
    def points(self) -> int:
        return len(self.root.labels)

    @property
    def tally(self) -> Tally:
        """Every scenario's counts, summed; `by_depth` from one crash."""
        below = self.root.below
        return replace(below, by_depth=below.by_depth[1:])

    def distinct(self) -> int:
        """Distinct (state, process) pairs among the scenarios' last lives: what the memo runs."""
        seen: set[tuple[bytes, int]] = set()
        visited: set[int] = set()

        def walk(life: Life, process: int) -> None:
            for nxt in life.after:
                seen.add((nxt.state, process + 1))
                if id(nxt) not in visited:
                    visited.add(id(nxt))
                    walk(nxt, process + 1)

        walk(self.root, 1)
        return len(seen)

    def row(self) -> Row:
        t = self.tally
        return Row(self.variant.slug, self.variant.name, t.by_depth, self.distinct(), t.with_dups, t.dups,
                   t.missing, t.wrong, t.asks, t.calls_plus, t.approvals, t.stuck, t.orphans)

    def scenarios(self) -> Iterator[ScenarioResult]:
        """Every scenario, in order: ``I``, then ``I:1``, its own scenarios below, ``I:2``, and so on."""
        slug = self.variant.slug

        def walk(life: Life, crashes: tuple[int, ...], choices: tuple[int, ...], labels: tuple[str, ...], hits: int,
                 saves: int):
            for (j, d), nxt in zip(life.forks, life.after):
                path, on, named = (*crashes, j), (*choices, d) if d else choices, (*labels, life.labels[j - 1])
                h, s = hits + j, saves + life.saves_by[j - 1]
                yield ScenarioResult(scenario_id(slug, path, choices=on), slug, path, named, nxt.outcome, h + nxt.hits,
                                     s + nxt.saves, on)
                yield from walk(nxt, path, on, named, h, s)

        return walk(self.root, (), (), (), 0, 0)


def sweep_variant(variant: Variant, job: Job, store: StoreFactory, depth: int = 2, share: bool = True,
                  advance: Advance = _ignore, runner: ScenarioRunner = run_scenario,
                  faults: Faults = NO_FAULTS) -> VariantSweep:
    """Every scenario of up to `depth` crashes; `share=False` re-executes each (the oracle), with `runner`.

    With `faults`, each scenario breaks more than the crash does (see `crashlab.faults`).
    """
    stem, memo = trunk(variant, job, store, depth, share, runner, faults), {}
    return stem.join([branch.grow(store, advance, memo) for branch in stem.branches])


def memory_stores(sync: str = "none") -> StoreFactory:
    return lambda points: MemoryStore(points, sync)


@contextmanager
def stores(kind: str, sync: str = "none") -> Iterator[StoreFactory]:
    """A factory of fresh stores of `kind` ("memory" or "files"), syncing as `sync` says, while the block runs."""
    if kind == "files":
        with file_stores(sync) as factory:
            yield factory
    else:
        yield memory_stores(sync)


@contextmanager
def file_stores(sync: str = "none") -> Iterator[StoreFactory]:
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
        return FileStore(previous[0], points, sync)

    try:
        yield fresh
    finally:
        shutil.rmtree(root, ignore_errors=True)

