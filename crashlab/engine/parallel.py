"""A sweep spread over processes, or over a Dask cluster, merged in one order whatever ran where.

Each variant's uninterrupted run (its trunk) runs here; the subtree of each first crash (a
`Branch`, a plain value) is a unit of work that runs anywhere. The trees that come back are joined
in the order of their first crash, so the tables, the JSON and scenarios.jsonl are the same to the
byte for any number of workers. Counts never depend on where a subtree ran: each worker keeps its
own memo of the states it has seen, and `distinct` is computed from the states' fingerprints,
which every process computes alike.
"""

from __future__ import annotations

import hashlib
import os
import pickle
from collections.abc import Callable, Iterable
from functools import partial
from typing import Any

from crashlab.engine.sweep import Advance, Branch, Life, Trunk, Variant, VariantSweep, run_scenario, stores, trunk
from crashlab.job import Job

#: The worker process's memo: what it grew for one branch it reuses for the next branch of the same
#: sweep. One sweep's at a time, named by a digest of what the lives depend on, so that a long-lived
#: Dask worker never answers one job from another job's memo.
_memo: tuple[bytes, dict] = (b"", {})


def grow_branches(branches: tuple[Branch, ...], store: str) -> list[Life]:
    """Grow neighbouring branches of one variant with a fresh store of kind `store`: the unit of work.

    Neighbours are sent together because their restarts meet the same states most often, so the
    memo saves the most when they grow in one process.
    """
    global _memo
    first = branches[0]
    sweep = hashlib.blake2b(pickle.dumps((first.variant, first.job, first.depth, store))).digest()
    if _memo[0] != sweep:
        _memo = (sweep, {})
    with stores(store) as factory:
        return [branch.grow(factory, memo=_memo[1]) for branch in branches]


def units(trunks: list[Trunk], workers: int) -> list[tuple[Branch, ...]]:
    """Each variant's branches in runs of neighbours, about four runs per worker over the whole sweep."""
    total = sum(len(t.branches) for t in trunks)
    size = max(1, -(-total // (4 * workers)))
    return [tuple(t.branches[k:k + size]) for t in trunks for k in range(0, len(t.branches), size)]


#: Seconds to wait for a Dask scheduler to answer before saying it cannot be reached.
CONNECT_TIMEOUT = 5


class SchedulerError(Exception):
    """A --scheduler that cannot be used: Dask is not installed, or nothing answers at the address."""


def default_workers() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def sweep_all(variants: Iterable[Variant], job: Job, store: str = "memory", depth: int = 2, share: bool = True,
              workers: int = 1, scheduler: str | None = None, advance: Advance = lambda n: None,
              kill: bool = False) -> list[VariantSweep]:
    """Sweep every variant: here with one worker, on a process pool with more, on a Dask cluster with `scheduler`.

    With `kill`, every process is a real one, killed for real (`crashlab.runners.forked`): re-executed, on files.
    """
    scenario = run_scenario
    if kill:
        from crashlab.runners.forked import run_scenario as scenario
    with stores(store) as factory:
        trunks = [trunk(v, job, factory, depth, share, scenario) for v in variants]
        if workers == 1 and scheduler is None:
            memos = [{} for _ in trunks]
            lives = [[b.grow(factory, advance, memo) for b in t.branches] for t, memo in zip(trunks, memos)]
            return [t.join(grown) for t, grown in zip(trunks, lives)]
    def done(lives: list[Life]) -> None:
        advance(sum(life.tally.scenarios for life in lives))

    run = runner(workers, scheduler)
    grown = [life for lives in run(partial(grow_branches, store=store), units(trunks, workers), done) for life in lives]
    sweeps, k = [], 0
    for t in trunks:
        sweeps.append(t.join(grown[k:k + len(t.branches)]))
        k += len(t.branches)
    return sweeps


#: Runs a picklable function on each item somewhere, and returns the results in the items' order,
#: calling `done` with each result as it arrives.
Runner = Callable[[Callable[[Any], Any], list, Callable[[Any], None]], list]


def runner(workers: int, scheduler: str | None) -> Runner:
    """A Dask cluster's if `scheduler` names one, else a pool of `workers` processes."""
    return on_dask(scheduler) if scheduler is not None else on_pool(workers)


def on_pool(workers: int) -> Runner:
    """A pool of forked processes (warm: they inherit the imported crashlab)."""

    def run(fn: Callable[[Any], Any], items: list, done: Callable[[Any], None]) -> list:
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor, as_completed

        context = multiprocessing.get_context("fork" if "fork" in multiprocessing.get_all_start_methods() else None)
        with ProcessPoolExecutor(workers, mp_context=context) as pool:
            return gathered([pool.submit(fn, item) for item in items], as_completed, done)

    return run


def on_dask(address: str) -> Runner:
    """A running Dask cluster (`crashlab[dask]`): its scheduler places the work on its workers."""

    def run(fn: Callable[[Any], Any], items: list, done: Callable[[Any], None]) -> list:
        try:
            from distributed import Client
            from distributed import as_completed as dask_completed
        except ImportError:
            raise SchedulerError("--scheduler needs Dask: pip install 'crashlab[dask]'") from None
        try:
            client = Client(address, timeout=CONNECT_TIMEOUT)
        except (OSError, TimeoutError, ValueError) as error:
            raise SchedulerError(f"cannot reach the Dask scheduler {address!r}: {error}") from None
        with client:
            return gathered(client.map(fn, items, pure=False), dask_completed, done)

    return run


def gathered(futures: list, completed: Callable, done: Callable[[Any], None]) -> list:
    """Each future's result, in the order submitted, telling `done` of each as it finishes."""
    index = {id(f): k for k, f in enumerate(futures)}
    results: list = [None] * len(futures)
    for future in completed(futures):
        results[index[id(future)]] = result = future.result()
        done(result)
    return results
