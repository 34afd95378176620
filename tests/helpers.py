"""The engine as the tests drive it: a variant by slug, a sweep or one scenario, under faults by name."""

import os
import sys
from collections.abc import Collection, Iterator, Sequence
from contextlib import contextmanager

from crashlab.api import Swept
from crashlab.engine.sweep import sweep, sweep_all
from crashlab.engine.tree import VariantSweep
from crashlab.job import Job
from crashlab.loops import FAMILIES, VARIANTS
from crashlab.protocols.death import Choice
from crashlab.protocols.fault import Fault, Faults, find
from crashlab.protocols.scenario import ScenarioRun, Setup
from crashlab.runners import Runner, RunnerSpec
from crashlab.runners.group import Boundary, Child


def faults(*named: str) -> Faults:
    """Faults by ``slug`` or ``slug=value``: ``faults("power-cut=file", "tracker-crash=two-step")``."""
    chosen = []
    for name in named:
        slug, _, value = name.partition("=")
        chosen.append(find(slug).configured(value or None))
    return Faults.of(chosen)


def setup(slug: str, job: Job, *under: str) -> Setup:
    return Setup(VARIANTS[slug], job, faults(*under))


def swept(slug: str, job: Job, *under: str, depth: int = 2, share: bool = True, store: str = "memory",
          kill: bool = False, workers: int = 1) -> VariantSweep:
    """`slug`'s sweep of `job` under the faults named, in process (or killed for real)."""
    spec = RunnerSpec("forked" if kill else "in-process", "files" if kill else store)
    return sweep(setup(slug, job, *under), spec, depth=depth, share=share, workers=workers)


@contextmanager
def runner(store: str = "memory", kill: bool = False) -> Iterator[Runner]:
    with RunnerSpec("forked" if kill else "in-process", "files" if kill else store).open() as opened:
        yield opened


def scenario(slug: str, job: Job, crashes: tuple[int, ...], *under: str, choices: tuple[Choice, ...] = (),
             store: str = "memory", kill: bool = False) -> ScenarioRun:
    """One scenario, re-executed from nothing, in process (or killed for real)."""
    with runner(store, kill) as run:
        return run.scenario(setup(slug, job, *under), crashes, choices)


def baseline_calls(slug: str, job: Job) -> int:
    """The model calls of `slug`'s uninterrupted run: what a scenario's extra calls are counted against."""
    return scenario(slug, job, ()).world.model.calls


def outcome(run: ScenarioRun):
    """A scenario's outcome, against the uninterrupted run of its variant."""
    return run.outcome(baseline_calls(run.setup.variant.slug, run.setup.job))


def results(sweep: VariantSweep) -> list:
    """Every scenario of a sweep as a comparable tuple: its ID, where it crashed, what it came to, and its cost."""
    return [(s.id, s.points, s.outcome, s.hits, s.saves) for s in sweep.scenarios()]


def sweep_family(family: str, job: Job, depth: int = 1, faults: Sequence[Fault] = (),
                 slugs: Collection[str] | None = None, runner: RunnerSpec = RunnerSpec("forked"),
                 share: bool = False) -> list[Swept]:
    """A runtime's rows (or those `slugs` names), each killed for real at every point, on two workers:
    re-executed, every scenario checked to retrace the run it repeats, unless `share`."""
    setups = [Setup(variant, job, Faults.of(faults)) for slug, variant in FAMILIES[family].items()
              if slugs is None or slug in slugs]
    return [Swept(s) for s in sweep_all(setups, runner, depth=depth, share=share, workers=2)]


def same_sweep(shared: Swept, replayed: Swept) -> None:
    """A shared sweep and its re-executed twin agree scenario by scenario, and in every column of the row: the
    states too, `distinct` and `windows`, which tell a runtime's states apart by what follows them, not by the
    bytes each run stamps anew (`VariantSweep.told`)."""
    assert results(shared.sweep) == results(replayed.sweep)
    assert shared.row() == replayed.row()


def started_in(directory: str | os.PathLike[str], program: str) -> Child:
    """A Python program (``-c``) started in `directory`, in a boundary of its own, as the harness starts each process
    of a program: forked, entered, then exec'd."""
    boundary = Boundary.new()
    pid = os.fork()
    if pid == 0:
        try:
            boundary.enter()
            os.chdir(directory)
            os.execv(sys.executable, [sys.executable, "-c", program])
        finally:
            os._exit(127)
    return Child(pid, boundary=boundary)
