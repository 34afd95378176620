"""A sweep spread over processes, or over a Dask cluster, merged in one order whatever ran where.

Each tree's uninterrupted run (its trunk) runs here; the subtree of each first crash (a `Branch`, a
plain value) is a unit of work that runs anywhere, each worker opening its own runner. The lives
that come back are joined in the order of their first crash, so the tables, the JSON and
scenarios.jsonl are the same to the byte for any number of workers. Counts never depend on where a
subtree ran: each worker keeps its own memo of the states it has seen, and `distinct` is computed
from the states' fingerprints, which every process computes alike.
"""

from __future__ import annotations

import hashlib
import os
import pickle
import re
from collections.abc import Callable
from functools import partial
from typing import Any

from crashlab.engine.death import Choice
from crashlab.engine.tree import Advance, Branch, Life, Trunk
from crashlab.errors import BadInput
from crashlab.runners import RunnerSpec

Grown = list[tuple[Choice, Life]]

#: The worker process's memo: what it grew for one branch it reuses for the next branch of the same
#: tree. One tree's at a time, named by a digest of what the lives depend on, so that a long-lived
#: Dask worker never answers one job from another job's memo.
_memo: tuple[bytes, dict] = (b"", {})


def grow_branches(branches: tuple[Branch, ...], spec: RunnerSpec) -> list[Grown]:
    """Grow neighbouring branches of one tree with a runner of `spec`'s: the unit of work.

    Neighbours are sent together because their restarts meet the same states most often, so the
    memo saves the most when they grow in one process.
    """
    global _memo
    first = branches[0]
    tree = hashlib.blake2b(pickle.dumps((first.setup, first.depth, first.share, spec))).digest()
    if _memo[0] != tree:
        _memo = (tree, {})
    with spec.open() as runner:
        return [branch.grow(runner, memo=_memo[1]) for branch in branches]


def units(trunks: list[Trunk], workers: int) -> list[tuple[Branch, ...]]:
    """Each tree's branches in runs of neighbours, about four runs per worker over the whole sweep."""
    total = sum(len(t.branches) for t in trunks)
    size = max(1, -(-total // (4 * workers)))
    return [tuple(t.branches[k:k + size]) for t in trunks for k in range(0, len(t.branches), size)]


def grow_everywhere(trunks: list[Trunk], spec: RunnerSpec, workers: int, scheduler: str | None,
                    advance: Advance) -> list[list[Grown]]:
    """Every trunk's branches grown on `workers` processes or a Dask cluster, back in their order."""
    def done(grown: list[Grown]) -> None:
        advance(sum(life.tally.scenarios for lives in grown for _, life in lives))

    work = units(trunks, workers)
    results = pool(workers, scheduler)(partial(grow_branches, spec=spec), work, done)
    flat = iter(grown for unit in results for grown in unit)
    return [[next(flat) for _ in t.branches] for t in trunks]


#: Seconds to wait for a Dask scheduler to accept a connection, and again for its first answer.
CONNECT_TIMEOUT = 5
#: What --scheduler takes: Dask's TCP (or TLS) address of a scheduler, an IPv6 host in brackets.
ADDRESS = re.compile(r"(tcp|tls)://(?P<host>\[[0-9A-Fa-f:.]+\]|[^\s:/\[\]]+):(?P<port>[0-9]{1,5})")


class SchedulerError(BadInput):
    """A --scheduler that cannot be used: Dask is not installed, or nothing answers at the address."""


def default_workers() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


#: Runs a picklable function on each item somewhere, and returns the results in the items' order,
#: calling `done` with each result as it arrives.
Pool = Callable[[Callable[[Any], Any], list, Callable[[Any], None]], list]


def pool(workers: int, scheduler: str | None) -> Pool:
    """A Dask cluster's if `scheduler` names one, else a pool of `workers` processes."""
    return on_dask(scheduler) if scheduler is not None else on_pool(workers)


def on_pool(workers: int) -> Pool:
    """A pool of forked processes (warm: they inherit the imported crashlab)."""

    def run(fn: Callable[[Any], Any], items: list, done: Callable[[Any], None]) -> list:
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor, as_completed

        context = multiprocessing.get_context("fork" if "fork" in multiprocessing.get_all_start_methods() else None)
        with ProcessPoolExecutor(workers, mp_context=context) as pool:
            return gathered([pool.submit(fn, item) for item in items], as_completed, done)

    return run


def on_dask(address: str) -> Pool:
    """A running Dask cluster (`crashlab[dask]`): its scheduler places the work on its workers."""

    def run(fn: Callable[[Any], Any], items: list, done: Callable[[Any], None]) -> list:
        try:
            from distributed import Client
            from distributed import as_completed as dask_completed
        except ImportError:
            raise SchedulerError("--scheduler needs Dask: pip install 'crashlab[dask]'") from None
        greet(address)
        try:
            client = Client(address, timeout=CONNECT_TIMEOUT)
        except (OSError, TimeoutError, ValueError) as error:
            raise SchedulerError(f"cannot reach the Dask scheduler {address!r}: {error}") from None
        with client:
            return gathered(client.map(fn, items, pure=False), dask_completed, done)

    return run


def greet(address: str) -> None:
    """Reach `address` and ask who answers, each step within CONNECT_TIMEOUT, or refuse it in one line.

    Dask's own client bounds only the TCP connect: a listener that never answers holds it forever,
    and a server that is not Dask's answers bytes its reader takes for a frame's length (an HTTP
    reply asks for exabytes). So the connection is made here first, then the first exchange (Dask's
    handshake, and the `identity` request a scheduler answers with its type) runs under one
    deadline; anything but a scheduler is refused before the client is made.
    """
    import asyncio
    import socket

    from distributed.comm import connect

    found = ADDRESS.fullmatch(address)
    if found is None or int(found["port"]) > 65535:
        raise SchedulerError(f"--scheduler {address!r}: a Dask scheduler's address is tcp://HOST:PORT")
    try:
        socket.create_connection((found["host"].strip("[]"), int(found["port"])), timeout=CONNECT_TIMEOUT).close()
    except OSError as error:
        why = f"nothing answered within {CONNECT_TIMEOUT} s" if isinstance(error, TimeoutError) else error.strerror
        raise SchedulerError(f"cannot reach the Dask scheduler {address!r}: {why or error}") from None

    async def identity() -> object:
        comm = await connect(address, timeout=CONNECT_TIMEOUT)
        try:
            await comm.write({"op": "identity", "reply": True})
            return await comm.read()
        finally:
            comm.abort()

    try:
        answer = asyncio.run(asyncio.wait_for(identity(), CONNECT_TIMEOUT))
    except TimeoutError:
        raise SchedulerError(f"{address!r} accepts connections but gave no Dask answer within {CONNECT_TIMEOUT} s: "
                             "is it a Dask scheduler?") from None
    except Exception as error:  # it closed the connection, or sent bytes Dask's reader cannot take (HTTP, garbage)
        raise SchedulerError(f"{address!r} answered, but not as a Dask scheduler ({type(error).__name__}: "
                             f"{str(error)[:80]})") from None
    if not (isinstance(answer, dict) and answer.get("type") == "Scheduler"):
        raise SchedulerError(f"{address!r} answered, but not as a Dask scheduler (it said {str(answer)[:60]!r})")


def gathered(futures: list, completed: Callable, done: Callable[[Any], None]) -> list:
    """Each future's result, in the order submitted, telling `done` of each as it finishes."""
    index = {id(f): k for k, f in enumerate(futures)}
    results: list = [None] * len(futures)
    for future in completed(futures):
        results[index[id(future)]] = result = future.result()
        done(result)
    return results
