"""A sweep spread over processes, or over a Dask cluster, merged in one order whatever ran where.

Each tree's uninterrupted run (its trunk) runs here; the subtree of each first crash (a `Branch`, a
plain value) is a unit of work that runs anywhere, each worker (each thread of a Dask worker)
opening its own runner once and keeping it for every unit it grows. The lives that come back are
joined in the order of their first crash, so the tables, the JSON and scenarios.jsonl are the same
to the byte for any number of workers. Counts never depend on where a subtree ran: each worker
keeps its own memo of the states it has seen, and `distinct` is computed from the states'
fingerprints, which every process computes alike.
"""

from __future__ import annotations

import hashlib
import os
import pickle
import re
import signal
import sys
import threading
import time
from collections.abc import Callable
from contextlib import ExitStack
from functools import partial
from multiprocessing.util import Finalize
from types import FrameType
from typing import Any

from crashlab.engine.tree import Advance, Branch, Life, Trunk, grow_all
from crashlab.errors import BadInput
from crashlab.lifeline import dies_with
from crashlab.protocols.death import Choice
from crashlab.protocols.runner import Runner, Runners

Grown = list[tuple[Choice, Life]]
#: The most worker processes a sweep asks for (`--workers`, the API's `workers`): more is a typo, not a machine.
MAX_WORKERS = 1024

#: The worker process's memo: what it grew for one branch it reuses for the next branch of the same
#: tree. One tree's at a time, named by a digest of what the lives depend on, so that a long-lived
#: Dask worker never answers one job from another job's memo.
_memo: tuple[bytes, dict] = (b"", {})


def grow_branches(branches: tuple[Branch, ...], spec: Runners) -> list[Grown]:
    """Grow neighbouring branches of one tree with a runner of `spec`'s: the unit of work.

    Neighbours are sent together because their restarts meet the same states most often, so the
    memo saves the most when they grow in one process.
    """
    global _memo
    first = branches[0]
    tree = hashlib.blake2b(pickle.dumps((first.setup, first.depth, first.share, spec))).digest()
    if _memo[0] != tree:
        _memo = (tree, {})
    runner = worker_runner(spec)
    try:
        return grow_all(branches, runner, _told, _memo[1])
    except BaseException:
        close_runner()  # a unit that failed may have left its runner broken (a service dead): the next opens anew
        raise


#: A pool worker's count of the scenarios it has grown, which the parent reads as they grow (`on_pool`); None
#: elsewhere (a Dask worker: there each unit's scenarios are counted as it comes back).
_grown: Any = None


def _told(n: int) -> None:
    if _grown is not None:
        with _grown.get_lock():
            _grown.value += n


#: Each worker thread's runner, open across its units: a forked runner's service is a process that takes
#: about 0.25 s to start and 0.3 s to stop, which a runner opened for each unit paid each time.
_held = threading.local()


def worker_runner(spec: Runners) -> Runner:
    """This thread's runner of `spec`, opened on first use and kept open until the worker ends (`close_runner`)."""
    held = getattr(_held, "runner", None)
    if held is not None and held[0] == spec:
        return held[1]
    close_runner()
    stack = ExitStack()
    runner = stack.enter_context(spec.open())
    _held.runner = (spec, runner, stack)
    # A worker of a pool (or of a Dask nanny) is a multiprocessing process, which ends through these finalizers
    # and never through atexit: its runner's scratch files and services go with it.
    Finalize(stack, stack.close, exitpriority=0)
    return runner


def close_runner() -> None:
    """Close this thread's runner, if it holds one: its service processes stop, its scratch files go."""
    held = getattr(_held, "runner", None)
    if held is not None:
        _held.runner = None
        held[2].close()


#: Runs of neighbours per worker over a whole sweep. Fewer, longer runs share more states in each worker's memo;
#: more, shorter ones even out the workers' ends. At four, two workers ran 28% more processes than one did (DBOS's
#: two rows at depth 2: 64 against 50; LangGraph's plain and keyed rows: 333 against 269); at two, 10 to 12% more,
#: and the book's, DBOS's and LangGraph's sweeps (killed, depth 2) took 10 to 18% less time than at four.
RUNS_PER_WORKER = 2


def units(trunks: list[Trunk], workers: int) -> list[tuple[Branch, ...]]:
    """Each tree's branches in runs of neighbours, about RUNS_PER_WORKER runs per worker over the whole sweep."""
    total = sum(len(t.branches) for t in trunks)
    size = max(1, -(-total // (RUNS_PER_WORKER * workers)))
    return [tuple(t.branches[k:k + size]) for t in trunks for k in range(0, len(t.branches), size)]


def grow_everywhere(trunks: list[Trunk], spec: Runners, workers: int, scheduler: str | None,
                    advance: Advance) -> list[list[Grown]]:
    """Every trunk's branches grown on `workers` processes or a Dask cluster, back in their order; `advance` is told
    of the scenarios as the workers grow them (a Dask cluster's, as each unit comes back)."""
    told = 0  # what `advance` has been told: the larger of the workers' live count and the units' finished one
    finished = 0

    def grown_so_far(count: int) -> None:
        nonlocal told
        if count > told:
            advance(count - told)
            told = count

    def done(unit: list[Grown]) -> None:
        nonlocal finished
        finished += sum(life.tally.scenarios for lives in unit for _, life in lives)
        grown_so_far(finished)

    work = units(trunks, workers)
    if not work:  # no first crash to grow anywhere (a fault that breaks the run without one)
        return [[] for _ in trunks]
    # No more processes than units of work: a worker with nothing to do is a process started for nothing.
    results = pool(min(workers, len(work)), scheduler)(partial(grow_branches, spec=spec), work, done, grown_so_far)
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


#: Runs a picklable function on each item somewhere, and returns the results in the items' order, calling `done`
#: with each result as it arrives; on a pool of processes, also `tick` every TICK with the count the workers
#: keep as they go (`count`: the scenarios they have grown).
Pool = Callable[..., list]


def pool(workers: int, scheduler: str | None) -> Pool:
    """A Dask cluster's if `scheduler` names one, else a pool of `workers` processes."""
    return on_dask(scheduler) if scheduler is not None else on_pool(workers)


#: How long a stopped worker gets to unwind (remove its scratch files, stop its services) before it is killed.
GRACE = 0.5


def on_pool(workers: int) -> Pool:
    """A pool of forked processes (warm: they inherit the imported crashlab) that dies with its parent.

    Stopped (SIGTERM, Ctrl-C, an error), the parent does not wait for the work in flight: it cancels
    what has not started, and tells each worker to unwind: it ends within GRACE.
    """

    def run(fn: Callable[[Any], Any], items: list, done: Callable[[Any], None],
            tick: Callable[[int], None] = lambda count: None) -> list:
        import multiprocessing
        from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait

        context = multiprocessing.get_context("fork" if "fork" in multiprocessing.get_all_start_methods() else None)
        counted = context.Value("q", 0)
        pool = ProcessPoolExecutor(workers, mp_context=context, initializer=_worker, initargs=(os.getpid(), counted))
        try:
            futures = [pool.submit(_unit, fn, item) for item in items]
            pending = set(futures)
            while pending:  # the workers' count, read every TICK while they work
                finished, pending = wait(pending, timeout=TICK, return_when=FIRST_COMPLETED)
                for future in futures:
                    if future in finished:
                        done(future.result())
                tick(counted.value)
            results = [future.result() for future in futures]
            pool.shutdown()  # interrupted here, too, it stops its workers: else the exit waits on one forever
        except BaseException:
            _stop(pool)
            raise
        return results

    return run


#: How often the parent reads the pool workers' count of scenarios grown, in seconds.
TICK = 0.25


def _worker(parent: int, counted: Any) -> None:
    """A pool worker's set-up: it counts the scenarios it grows where its parent reads them, dies with its parent,
    and leaves stopping to it.

    SIGTERM (from the parent, or from the kernel when the parent dies) unwinds the unit in hand, so
    its `with` blocks clean up; Ctrl-C reaches the whole process group, and only the parent acts on it.
    """
    global _grown
    _grown = counted
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, _unwind)
    signal.signal(signal.SIGALRM, _unwind)
    sys.unraisablehook = _swallowed
    dies_with(parent, signal.SIGTERM)


def _unwind(signum: int, frame: FrameType | None) -> None:
    """Stop the worker: raise SystemExit, so the unit in hand unwinds, and end it within GRACE whatever happens.

    The first time (SIGTERM), SIGALRM is set to raise it again after half of GRACE; the second time,
    SIGALRM ends the process at the end of GRACE.
    """
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    if signum == signal.SIGALRM:
        signal.signal(signal.SIGALRM, signal.SIG_DFL)
    signal.setitimer(signal.ITIMER_REAL, GRACE / 2)
    raise SystemExit(128 + signal.SIGTERM)


def _swallowed(unraisable: Any) -> None:
    """A stop that landed where Python can only print an exception (an at-fork hook): raise it again at once."""
    if isinstance(unraisable.exc_value, SystemExit) and signal.getsignal(signal.SIGTERM) == signal.SIG_IGN:
        signal.setitimer(signal.ITIMER_REAL, 0.01)
    else:
        sys.__unraisablehook__(unraisable)


def _unit(fn: Callable[[Any], Any], item: Any) -> Any:
    """Run one unit in a worker; stopped, the worker exits once the unit has unwound, and takes no other."""
    try:
        return fn(item)
    except SystemExit as stop:
        close_runner()
        os._exit(stop.code if isinstance(stop.code, int) else 1)


def _stop(pool: Any) -> None:
    """Cancel the pool's work, SIGTERM its workers, and SIGKILL any still there well after GRACE."""
    processes = list(pool._processes.values())  # Python 3.14 has terminate_workers(); 3.11 only this
    pool.shutdown(wait=False, cancel_futures=True)
    for process in processes:
        if process.is_alive():
            process.terminate()
    deadline = time.monotonic() + 2 * GRACE
    for process in processes:
        process.join(max(0.0, deadline - time.monotonic()))
        if process.is_alive():
            process.kill()
            process.join()


def on_dask(address: str) -> Pool:
    """A running Dask cluster (`crashlab[dask]`): its scheduler places the work on its workers."""

    def run(fn: Callable[[Any], Any], items: list, done: Callable[[Any], None],
            tick: Callable[[int], None] = lambda count: None) -> list:
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
