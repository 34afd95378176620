"""How a sweep runs: plan each tree (one per configuration of its faults), grow its branches, join them.

The branches grow here with one worker, or on a pool of processes or a Dask cluster with more
(`crashlab.engine.parallel`); the trees are joined in the order of their first crashes, so the
output is the same to the byte however many workers ran it.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from math import comb

from crashlab.engine.copies import INSTEAD, checked
from crashlab.engine.merges import UNSHARED, check_merges
from crashlab.engine.tree import Advance, Life, Trunk, VariantSweep, _ignore, grow_all, trunk
from crashlab.errors import BadInput
from crashlab.protocols.death import Choice
from crashlab.protocols.fault import Faults
from crashlab.protocols.runner import Runner, Runners
from crashlab.protocols.scenario import ScenarioRun, Setup

#: The deepest sweep (`--depth`, the API's `depth`): deeper, the scenarios of even a small job outnumber what a machine
#: can run.
MAX_DEPTH = 8


def sweep(setup: Setup, spec: Runners, depth: int = 2, share: bool = True, workers: int = 1,
          scheduler: str | None = None, advance: Advance = _ignore, repeat: int = 1, strays_fail: bool = True,
          baselines: int = 2) -> VariantSweep:
    """Every scenario of `setup` of up to `depth` crashes, on the runners `spec` opens; `share=False` re-executes
    each (the oracle)."""
    return sweep_all([setup], spec, depth, share, workers, scheduler, advance, repeat, strays_fail, baselines)[0]


def sweep_all(setups: Sequence[Setup], spec: Runners, depth: int = 2, share: bool = True,
              workers: int = 1, scheduler: str | None = None, advance: Advance = _ignore, repeat: int = 1,
              strays_fail: bool = True, baselines: int = 2, max_scenarios: int | None = None,
              expect: Advance = _ignore) -> list[VariantSweep]:
    """Sweep every setup: here with one worker, on a process pool with more, on a Dask cluster with `scheduler`.

    A setup its runner cannot start from snapshots (`Runners.shares`) re-executes every scenario, whatever
    `share` says. With `max_scenarios`, a sweep of more scenarios is refused, before it grows or as it does (`Bound`).
    `advance` is told of each scenario as it grows, and `expect` of about how many there are before the bulk of them
    grows: what a progress bar needs.
    """
    for setup in setups:
        spec.check(setup)
    options = {"depth": depth, "repeat": repeat, "strays_fail": strays_fail, "baselines": baselines}
    bound = Bound(max_scenarios, depth)
    advance = bound.counting(advance)
    with spec.open() as runner:
        chosen = [{**options, "share": share and spec.shares(setup)} for setup in setups]
        # Every uninterrupted run, and every estimate, before any tree grows: a sweep past the bound is refused
        # before it has spent anything on its first variants.
        stems = [first_trunk(setup, runner, o, bound) for setup, o in zip(setups, chosen, strict=True)]
        for stem, o in zip(stems, chosen, strict=True):
            if o["share"] and stem.setup.variant.on_its_word:
                check_copies(stem)  # a loop that says it keeps all in its run directory: checked as it grows
            if o["share"] and not stem.setup.variant.keeps_checkpoint:  # crashlab's checkpoint is all its loops keep
                check_merges(stem, runner, INSTEAD if stem.setup.variant.on_its_word else UNSHARED)
        plans = [plan(setup, stem, runner, o, bound, advance)
                 for setup, stem, o in zip(setups, stems, chosen, strict=True)]
        expect(bound.estimate)
        trunks = [t for _, ts in plans for t in ts]
        if workers == 1 and scheduler is None:
            lives = [grow_here(t, runner, advance) for t in trunks]
        else:
            from crashlab.engine.parallel import grow_everywhere

            lives = grow_everywhere(trunks, spec, workers, scheduler, advance)
    grown = iter(zip(trunks, lives, strict=True))
    return [VariantSweep(setup, first, tuple(t.join(next(grown)[1]) for t in ts))
            for setup, (first, ts) in zip(setups, plans, strict=True)]


def check_copies(stem: Trunk) -> None:
    """Have the branches of `stem` at the points `checked` names check, as they grow, that a restart from a copy of
    what a death there left does what the restart after the death itself does (`crashlab.engine.copies`)."""
    last = {branch.crash: k for k, branch in enumerate(stem.branches)}
    for j in checked(len(last)):
        stem.branches[last[j]] = replace(stem.branches[last[j]], checks=True)


def first_trunk(setup: Setup, runner: Runner, options: dict, bound: Bound) -> Trunk:
    """The trunk of `setup`'s first tree, checked against the bound: its own, or, if its faults vary (a wrong
    answer to each question in turn), that of the sweep without them, which finds what they vary over."""
    steady = Faults(tuple(f for f in setup.faults.members if f not in setup.faults.varying))
    setup = replace(setup, faults=steady) if setup.faults.varying else setup
    began = time.perf_counter()
    stem = trunk(setup, runner, **options)
    bound.check(setup, [stem], (time.perf_counter() - began) / options["baselines"])
    return stem


def plan(setup: Setup, stem: Trunk, runner: Runner, options: dict, bound: Bound,
         advance: Advance = _ignore) -> tuple[ScenarioRun, list[Trunk]]:
    """The trunks of `setup`'s trees, with its uninterrupted run: `stem`, its first, unless its faults vary, when
    the sweep without them grows here from `stem`, and each configuration they find is a tree of its own."""
    if not setup.faults.varying:
        return stem.run, [stem]
    without = Unvaried(stem.setup, stem.run, (stem.join(grow_here(stem, runner, advance)),), runner)
    began = time.perf_counter()
    trunks = [trunk(replace(setup, faults=config), runner, **options) for config in setup.faults.variations(without)]
    bound.check(setup, trunks, (time.perf_counter() - began) / max(1, len(trunks) * options["baselines"]))
    return without.first, trunks


@dataclass(frozen=True)
class Unvaried(VariantSweep):
    """The sweep without the faults that vary, as they see it to find what they vary over: it can run the loop
    once more, uninterrupted, under other faults (`crashlab.protocols.fault.Rerunning`)."""

    runner: Runner

    def rerun(self, faults: Faults) -> ScenarioRun:
        return self.runner.scenario(replace(self.setup, faults=faults), (), ())


@dataclass
class Bound:
    """The most scenarios a sweep may hold, all its variants together (None: no bound), held twice over.

    How many scenarios a tree holds is known only once it has grown, so before it grows it is
    estimated from its trunk (`estimated`), and a sweep whose estimate is already past the bound is
    refused at once. The estimate is meant to err low, so that a sweep within the bound is not refused
    by it (it did on every loop measured); what it misses is caught as the sweep grows: it stops once
    it has grown past the bound (`counting`).
    """

    limit: int | None
    depth: int
    estimate: int = 0  # the sweep's, over the trees planned so far
    grown: int = 0

    def check(self, setup: Setup, trunks: Sequence[Trunk], seconds_per_run: float) -> None:
        mine = sum(estimated(t, self.depth) for t in trunks)
        self.estimate += mine
        if self.limit is not None and self.estimate > self.limit:
            minutes = mine * seconds_per_run / 60
            took = f"{minutes:,.0f} minutes or more" if minutes >= 1 else "under a minute"
            whole = f" (the sweep, about {self.estimate:,})" if self.estimate != mine else ""
            raise BadInput(f"{setup.id(())} to depth {self.depth} is about {mine:,} scenarios or more{whole}, {took} "
                           f"at the pace of its uninterrupted run: more than --max-scenarios {self.limit:,} (pass a "
                           "larger one to go on, or a smaller --depth)")

    def counting(self, advance: Advance) -> Advance:
        """`advance`, which also stops the sweep (`BadInput`) once it has grown more scenarios than the bound."""
        def counted(n: int) -> None:
            advance(n)
            self.grown += n
            if self.limit is not None and self.grown > self.limit:
                raise BadInput(f"the sweep grew past --max-scenarios {self.limit:,} ({self.grown:,} scenarios so far, "
                               f"against an estimate of {self.estimate:,} before it grew): pass a larger one to go "
                               "on, or a smaller --depth")
        return counted


def estimated(stem: Trunk, depth: int) -> int:
    """About the fewest scenarios a tree holds, from its trunk: each of its `b` first crashes is a scenario, and a
    restart that resumes where its process died passes the `n - i + 1` points from there to the end, so to depth
    `d` the crashes fall at points i1 <= i2 <= ... of the uninterrupted run's `n`: b/n * sum of C(n + k - 1, k)
    for k = 1..d. crashlab's own loops pass a few more on each restart, as they read back what they saved: on
    the shipped jobs this is 0.90 to 0.94 of the real count at depth 2, 0.74 to 0.83 at depth 3 (the old
    estimate, b * n^(k-1), was 1.7 and 4 to 4.6 times it). A loop that replays from its start passes more
    still, and a fault that adds states more again (late-delivery: 0.3 to 0.5): `Bound.counting` catches it."""
    points, branches = stem.run.passed(1), len(stem.branches)
    crashes = stem.setup.faults.depth(depth)
    if points == 0:
        return branches
    return round(branches / points * sum(comb(points + k - 1, k) for k in range(1, crashes + 1)))


def grow_here(stem: Trunk, runner: Runner, advance: Advance = _ignore) -> list[list[tuple[Choice, Life]]]:
    """A trunk's branches, grown here one after another, sharing one memo of the states they meet."""
    return grow_all(stem.branches, runner, advance)
