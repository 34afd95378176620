"""How a sweep runs: plan each tree (one per configuration of its faults), grow its branches, join them.

The branches grow here with one worker, or on a pool of processes or a Dask cluster with more
(`crashlab.engine.parallel`); the trees are joined in the order of their first crashes, so the
output is the same to the byte however many workers ran it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from crashlab.engine.death import Choice
from crashlab.engine.scenario import ScenarioRun, Setup
from crashlab.engine.tree import Advance, Life, Trunk, VariantSweep, _ignore, trunk
from crashlab.faults import Faults
from crashlab.runners import Runner, RunnerSpec, check_runs


def sweep(setup: Setup, spec: RunnerSpec = RunnerSpec(), depth: int = 2, share: bool = True, workers: int = 1,
          scheduler: str | None = None, advance: Advance = _ignore, repeat: int = 1, strays_fail: bool = True,
          baselines: int = 2) -> VariantSweep:
    """Every scenario of `setup` of up to `depth` crashes; `share=False` re-executes each (the oracle)."""
    return sweep_all([setup], spec, depth, share, workers, scheduler, advance, repeat, strays_fail, baselines)[0]


def sweep_all(setups: Sequence[Setup], spec: RunnerSpec = RunnerSpec(), depth: int = 2, share: bool = True,
              workers: int = 1, scheduler: str | None = None, advance: Advance = _ignore, repeat: int = 1,
              strays_fail: bool = True, baselines: int = 2) -> list[VariantSweep]:
    """Sweep every setup: here with one worker, on a process pool with more, on a Dask cluster with `scheduler`.

    A runner that keeps no snapshot (`forked`) re-executes every scenario, whatever `share` says.
    """
    for setup in setups:
        check_runs(setup, spec)
    share = share and "snapshots" in spec.offers
    options = {"depth": depth, "share": share, "repeat": repeat, "strays_fail": strays_fail, "baselines": baselines}
    with spec.open() as runner:
        plans = [plan(setup, runner, options) for setup in setups]
        trunks = [t for _, ts in plans for t in ts]
        if workers == 1 and scheduler is None:
            lives = [grow_here(t, runner, advance) for t in trunks]
        else:
            from crashlab.engine.parallel import grow_everywhere

            lives = grow_everywhere(trunks, spec, workers, scheduler, advance)
    grown = iter(zip(trunks, lives, strict=True))
    return [VariantSweep(setup, first, tuple(t.join(next(grown)[1]) for t in ts))
            for setup, (first, ts) in zip(setups, plans, strict=True)]


def plan(setup: Setup, runner: Runner, options: dict) -> tuple[ScenarioRun, list[Trunk]]:
    """The trunks of `setup`'s trees, with its uninterrupted run: one trunk, unless its faults vary
    (a wrong answer to each question in turn), when each configuration is a tree of its own."""
    faults = setup.faults
    if not faults.varying:
        stem = trunk(setup, runner, **options)
        return stem.run, [stem]
    steady = Faults(tuple(f for f in faults.members if f not in faults.varying))
    without = grown_here(replace(setup, faults=steady), runner, options)
    return without.first, [trunk(replace(setup, faults=config), runner, **options)
                           for config in faults.variations(without)]


def grown_here(setup: Setup, runner: Runner, options: dict) -> VariantSweep:
    """A sweep grown here, with a runner already open: what a fault looks at to find its variations."""
    first, trunks = plan(setup, runner, options)
    return VariantSweep(setup, first, tuple(t.join(grow_here(t, runner)) for t in trunks))


def grow_here(stem: Trunk, runner: Runner, advance: Advance = _ignore) -> list[list[tuple[Choice, Life]]]:
    """A trunk's branches, grown here one after another, sharing one memo of the states they meet."""
    memo: dict[tuple[bytes, int], Life] = {}
    return [branch.grow(runner, advance, memo) for branch in stem.branches]
