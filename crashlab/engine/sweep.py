"""How a sweep runs: plan each tree (one per configuration of its faults), grow its branches, join them.

The branches grow here with one worker, or on a pool of processes or a Dask cluster with more
(`crashlab.engine.parallel`); the trees are joined in the order of their first crashes, so the
output is the same to the byte however many workers ran it.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, replace

from crashlab.engine.death import Choice
from crashlab.engine.scenario import ScenarioRun, Setup
from crashlab.engine.tree import Advance, Life, Trunk, VariantSweep, _ignore, trunk
from crashlab.errors import BadInput
from crashlab.faults import Faults
from crashlab.runners import Runner, RunnerSpec, check_runs


def sweep(setup: Setup, spec: RunnerSpec = RunnerSpec(), depth: int = 2, share: bool = True, workers: int = 1,
          scheduler: str | None = None, advance: Advance = _ignore, repeat: int = 1, strays_fail: bool = True,
          baselines: int = 2) -> VariantSweep:
    """Every scenario of `setup` of up to `depth` crashes; `share=False` re-executes each (the oracle)."""
    return sweep_all([setup], spec, depth, share, workers, scheduler, advance, repeat, strays_fail, baselines)[0]


def sweep_all(setups: Sequence[Setup], spec: RunnerSpec = RunnerSpec(), depth: int = 2, share: bool = True,
              workers: int = 1, scheduler: str | None = None, advance: Advance = _ignore, repeat: int = 1,
              strays_fail: bool = True, baselines: int = 2, max_scenarios: int | None = None) -> list[VariantSweep]:
    """Sweep every setup: here with one worker, on a process pool with more, on a Dask cluster with `scheduler`.

    A setup its runner cannot start from snapshots (`RunnerSpec.shares`) re-executes every scenario, whatever
    `share` says. With `max_scenarios`, a tree estimated to hold more is refused before it grows (`Bound`).
    """
    for setup in setups:
        check_runs(setup, spec)
    options = {"depth": depth, "repeat": repeat, "strays_fail": strays_fail, "baselines": baselines}
    bound = Bound(max_scenarios, depth)
    with spec.open() as runner:
        plans = [plan(setup, runner, {**options, "share": share and spec.shares(setup)}, bound) for setup in setups]
        trunks = [t for _, ts in plans for t in ts]
        if workers == 1 and scheduler is None:
            lives = [grow_here(t, runner, advance) for t in trunks]
        else:
            from crashlab.engine.parallel import grow_everywhere

            lives = grow_everywhere(trunks, spec, workers, scheduler, advance)
    grown = iter(zip(trunks, lives, strict=True))
    return [VariantSweep(setup, first, tuple(t.join(next(grown)[1]) for t in ts))
            for setup, (first, ts) in zip(setups, plans, strict=True)]


def plan(setup: Setup, runner: Runner, options: dict, bound: Bound | None = None) -> tuple[ScenarioRun, list[Trunk]]:
    """The trunks of `setup`'s trees, with its uninterrupted run: one trunk, unless its faults vary
    (a wrong answer to each question in turn), when each configuration is a tree of its own."""
    bound = bound or Bound(None, options["depth"])
    faults = setup.faults
    if not faults.varying:
        began = time.perf_counter()
        stem = trunk(setup, runner, **options)
        bound.check(setup, [stem], (time.perf_counter() - began) / options["baselines"])
        return stem.run, [stem]
    steady = Faults(tuple(f for f in faults.members if f not in faults.varying))
    without = grown_here(replace(setup, faults=steady), runner, options, bound)
    began = time.perf_counter()
    trunks = [trunk(replace(setup, faults=config), runner, **options) for config in faults.variations(without)]
    bound.check(setup, trunks, (time.perf_counter() - began) / max(1, len(trunks) * options["baselines"]))
    return without.first, trunks


@dataclass(frozen=True)
class Bound:
    """The most scenarios a sweep may hold (None: no bound), and the test each planned tree must pass.

    How many scenarios a tree holds is known only once it has grown, so it is estimated from its
    trunk, before the growing: each of its `b` first crashes is a scenario, and each process after
    it can die at any of the `n` points the uninterrupted run passes, down to the depth, so
    b·(1 + n + … + n^(depth-1)). A restart passes fewer points than a first run, so this errs high.
    """

    limit: int | None
    depth: int

    def check(self, setup: Setup, trunks: Sequence[Trunk], seconds_per_run: float) -> None:
        if self.limit is None:
            return
        estimate = sum(estimated(t, self.depth) for t in trunks)
        if estimate > self.limit:
            minutes = estimate * seconds_per_run / 60
            took = f"up to {minutes:,.0f} minutes" if minutes >= 1 else "under a minute"
            raise BadInput(f"{setup.id(())} to depth {self.depth} is about {estimate:,} scenarios, {took} at the "
                           f"pace of its uninterrupted run: more than --max-scenarios {self.limit:,} (pass a larger "
                           "one to go on, or a smaller --depth)")


def estimated(stem: Trunk, depth: int) -> int:
    """`Bound`'s estimate of the scenarios of a tree, from its trunk."""
    points = stem.run.passed(1)
    return len(stem.branches) * sum(points**k for k in range(stem.setup.faults.depth(depth)))


def grown_here(setup: Setup, runner: Runner, options: dict, bound: Bound | None = None) -> VariantSweep:
    """A sweep grown here, with a runner already open: what a fault looks at to find its variations."""
    first, trunks = plan(setup, runner, options, bound)
    return VariantSweep(setup, first, tuple(t.join(grow_here(t, runner)) for t in trunks))


def grow_here(stem: Trunk, runner: Runner, advance: Advance = _ignore) -> list[list[tuple[Choice, Life]]]:
    """A trunk's branches, grown here one after another, sharing one memo of the states they meet."""
    memo: dict[tuple[bytes, int], Life] = {}
    return [branch.grow(runner, advance, memo) for branch in stem.branches]
