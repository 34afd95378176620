"""Sweep a loop crashlab did not write: mark its crash points, give its tools a tracker, and kill it for real.

Your loop is an entry point, ``entry(run)``, that does one process's share of the work: it starts
or resumes from whatever it keeps in ``run.directory``, and its tools change the world through
``run.tracker`` (an issue tracker in a SQLite file, with keys and lookups). It marks where it can die
with ``crashlab.point(label)``, which does nothing outside a sweep, so the marks can stay in
production code; the tracker marks ``accepted`` itself, right after it commits a request.

`sweep` runs it through the same engine as crashlab's own loops, on the forked runner: every
process a real one, SIGKILLed at its crash point. It runs the loop uninterrupted more than once and
refuses a loop whose runs pass different points; then, for every point, it forks a process that
dies there, forks a restart over the same files, and lets it finish (crashing the restarts too, up
to `depth`); afterwards it counts, from the tracker's file, each intended effect's records: a
duplicate is a second record of one effect, a missing effect has none. Each scenario can run
`repeat` times; one whose repeats differ (in what they came to, or in the points they passed and the
requests they made on the way), or whose process strays from the run it repeats, is flaky: it fails
the sweep, and counts the worst of what it came to.
"""

from __future__ import annotations

import pickle
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from crashlab.engine.parallel import MAX_WORKERS
from crashlab.engine.sweep import MAX_DEPTH
from crashlab.engine.sweep import sweep as sweep_setup
from crashlab.engine.tree import Row, VariantSweep
from crashlab.errors import BadInput
from crashlab.loops import yours
from crashlab.profiles import DEFAULT
from crashlab.profiles import find as find_profile
from crashlab.protocols.outcome import COUNT_KEYS
from crashlab.protocols.points import named
from crashlab.protocols.run import Entry, Run
from crashlab.protocols.scenario import ScenarioResult, Setup
from crashlab.report.story import find_repeats, render, story
from crashlab.report.tables import columns_for, records
from crashlab.report.windows import describe, windows
from crashlab.runners import RunnerSpec
from crashlab.service.yours import YourService
from crashlab.world import TrackerMode
from crashlab.world.client import TrackerClient as Tracker
from crashlab.world.effects import Effect

#: What a loop means to do, once each: effects by what they are, or the names its tools tag requests with.
Effects = Mapping[str, Any] | Iterable[Effect] | Iterable[str]

__all__ = ["Effect", "Effects", "Entry", "Run", "Swept", "Tracker", "YourService", "explain", "loop", "render",
           "sweep"]


def loop(entry: Entry, effects: Effects, *, name: str = "loop", tracker: TrackerMode = "keyed",
         service: YourService | None = None, scheduled: bool = False, state_in_run_dir: bool = False) -> Setup:
    """Your loop as crashlab runs it (see `crashlab.loops.yours.setup`)."""
    return yours.setup(entry, effects, name=name, tracker=tracker, service=service, scheduled=scheduled,
                       state_in_run_dir=state_in_run_dir)


@dataclass(frozen=True)
class Swept:
    """A sweep of your loop: every scenario, and the table's sums over them (a flaky one by its worst outcome)."""

    sweep: VariantSweep
    depth: int = 2
    repeat: int = 1  # runs of each scenario: a failure's replay runs it as many times

    @property
    def name(self) -> str:
        return self.sweep.setup.variant.slug

    @property
    def points(self) -> list[str]:
        """The uninterrupted run's crash points, as ``label#occurrence``: scenario ``NAME:I`` crashes at the I-th."""
        return named([point.label for point in self.sweep.first.points.points(1)])

    @property
    def scenarios(self) -> list[ScenarioResult]:
        return list(self.sweep.scenarios())

    def row(self) -> Row:
        return self.sweep.row()

    @property
    def dups(self) -> int:
        return self.row().dups

    @property
    def with_dups(self) -> int:
        return self.row().with_dups

    @property
    def missing(self) -> int:
        return self.row().missing

    @property
    def flaky(self) -> int:
        return self.row().flaky

    @property
    def ok(self) -> bool:
        """No scenario failed: none duplicated, lost an effect, left an orphan, got stuck or was flaky
        (`failures` has a line for each window of those that did)."""
        row = self.row()
        return not (row.dups or row.missing or row.wrong or row.orphans or row.stuck or row.flaky)

    def record(self) -> dict[str, Any]:
        """The row as data: what `crashlab sweep --format json` prints for this loop, field for field."""
        row = self.row()
        table = self.sweep.setup.variant.table
        columns = columns_for([table], self.depth, row.uncrashed > 0, row.faults != "crash")
        return records([row], columns)[0]

    def report(self) -> str:
        """What a failing test prints: the counts, then each window of failures with the call that replays it."""
        counts = ", ".join(f"{key} {value}" for key, value in self.record().items()
                           if key in COUNT_KEYS and value)
        return "\n".join([f"{self.name}: {self.row().scenarios} scenarios; {counts or 'nothing failed'}",
                          *self.failures()])

    def failures(self) -> list[str]:
        """A line for each window of failing scenarios (consecutive crash points of one process, after the same
        earlier deaths, that fail the same way), with the call that replays its first: what a test prints."""
        tracker = self.sweep.setup.variant.tracker
        told = f", tracker={tracker!r}" if tracker != "keyed" else ""
        told += f", repeat={self.repeat}" if self.repeat > 1 else ""
        return [describe(w, lambda sid: f"crashlab.api.explain(entry, effects, {sid!r}{told})")
                for w in windows(self.sweep.scenarios())]


def sweep(entry: Entry, effects: Effects, *, name: str = "loop", tracker: TrackerMode = "keyed",
          depth: int = 2, repeat: int = 1, baselines: int = 2, workers: int = 1,
          service: YourService | None = None, state_in_run_dir: bool = False, profile: str = DEFAULT) -> Swept:
    """Kill `entry` at every crash point it reaches (and its restarts, up to `depth`), and count each effect.

    `effects` are what the loop means to do, each once: by what each is (``{"A": {"issue": TITLE},
    "C": {"comment": "A"}}``), for a loop whose tools call crashlab's service at
    ``CRASHLAB_TRACKER_URL``; or the `effect` names your tools give `run.tracker`. With `workers`
    above 1, the subtrees of the first crashes run on a pool of forked processes (the entry point
    must then be picklable, as a module-level function or a partial of one is); the scenarios come
    back in the same order. With `repeat`, each scenario runs that many times, and one whose runs differ is
    flaky (`ok` is False, and it counts the worst it came to): one run of a loop with a race is one throw
    of its dice. With `service`, one of yours stands in for crashlab's
    (`crashlab.service.yours.YourService`: env, reset, records); the loop then dies only at its own
    crash points. With `state_in_run_dir`, your word that the loop keeps all it keeps in ``run.directory``,
    each restart starts from a copy of what its death left there, and equal states restart once; the sweep
    first checks your word at three crash points, and refuses the loop if a restart from a copy does
    otherwise than the restart after the death (`crashlab.engine.copies`). With `profile`, the tracker keeps
    that provider's idempotency contract (`crashlab.profiles`: ``"qonto"``, ``"acp"``, ...) instead of the
    default's, and the scenarios' IDs name it (``NAME@qonto:3``).
    """
    counted(depth=depth, repeat=repeat, baselines=baselines, workers=workers)
    setup = loop(entry, effects, name=name, tracker=tracker, service=service, state_in_run_dir=state_in_run_dir)
    setup = replace(setup, profile=find_profile(profile).slug)
    if workers > 1:
        sendable(setup)
    return Swept(sweep_setup(setup, RunnerSpec("forked"), depth=depth, share=state_in_run_dir and repeat == 1,
                             workers=workers, repeat=repeat, strays_fail=False, baselines=baselines), depth, repeat)


#: The most each count may be, as on the command line.
MOST = {"depth": MAX_DEPTH, "workers": MAX_WORKERS}


def counted(**values: object) -> None:
    """Refuse, as the command line does, a count that is not a whole number from 1 (a bool, a float, 0) or is past
    the command line's bound."""
    for name, value in values.items():
        most = MOST.get(name)
        if isinstance(value, bool) or not isinstance(value, int) or value < 1 or (most and value > most):
            within = f" to {most:,}" if most else ""
            raise BadInput(f"{name} must be a whole number from 1{within} (got {value!r})")


def sendable(setup: Setup) -> None:
    """Refuse, before the sweep, a loop a worker process cannot be sent: its entry point is pickled, by name."""
    try:
        pickle.dumps(setup)
    except (pickle.PicklingError, TypeError, AttributeError) as error:
        raise BadInput(f"the loop's entry cannot be sent to a worker process: {error}; pass workers=1 or define it "
                       "at module level") from None


def explain(entry: Entry, effects: Effects, scenario: str, *, name: str | None = None,
            tracker: TrackerMode = "keyed", repeat: int = 1) -> dict[str, Any]:
    """One scenario's story (``NAME:I`` or ``NAME:I:J...``, as `sweep` names them), process by process,
    each process killed for real again where the scenario says. Run `repeat` times, a flaky scenario's
    story also holds (``flaky``) every outcome its repeats came to, with how many came to each."""
    counted(repeat=repeat)
    name = name or scenario.partition(":")[0]
    setup = loop(entry, effects, name=name, tracker=tracker)
    runs, calls = find_repeats(scenario, setup.job, {name: setup.variant}, repeat)
    return story(runs[0], calls, runs)
