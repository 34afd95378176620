"""Deterministic scheduling of a loop's threads: one runs at a time, and which one is a recorded choice.

A runtime that runs a reply's tool calls in parallel hands them to a thread pool, and the order in
which the calls reach the service, or its checkpoint, is the operating system's. A sweep cannot
count such a loop: its uninterrupted runs differ, and a restart races the same way. Here the
threads take turns instead, as CHESS and loom make them: one baton, held by the one thread that
runs; every other waits for it. A thread hands the baton on only where the scheduler sees it:

- at each crash point (`crashlab.point`), the scheduling points;
- at the start and the end of a task submitted to a `concurrent.futures.ThreadPoolExecutor`
  (its done callbacks included, which is where LangGraph saves a call's result);
- where it would block on another thread: `threading.Event.wait` (so `concurrent.futures.wait`
  and `as_completed`, which wait on one), `Future.result` and `Future.exception`;
- where it sleeps (`time.sleep`), as a loop that polls for another thread's work does (DBOS polls
  its database for a workflow's result): every other thread that can go on goes first;
- where an asyncio event loop waits for what to do next (its selector's ``select``), as one does
  while a tool call it handed to a thread (``asyncio.to_thread``, ``run_in_executor``: the loop's
  default executor is a `ThreadPoolExecutor`) runs: it goes on once the selector has something
  ready (the pool's thread ends by waking it), or, waiting on a timer, as a sleeper. The OpenAI
  Agents SDK runs a reply's sync tools so, each in an asyncio task of its own.

Who takes the baton is a decision among the threads that can run: those waiting at a point, the
tasks submitted and not yet begun, and those blocked whose condition now holds (the event set, the
future done). The scheduler knows each of them without waiting for them to arrive: a task is known
from its submission, by the thread that holds the baton, and a blocked thread by its condition,
which only the baton's holder can change. So the decision depends on nothing but the order of what
the threads did, and a run repeats itself. The default is a thread's own turn: the one that yields
at a point goes on, and when it blocks or ends, the first thread by its number (the loop's own
thread is 0; each task its number in the order of submission). A decision with more than one
thread to choose from is noted (``schedule``, as is each change of thread without one, so that
the story says which thread passed each point), and `picks` can choose otherwise: the k-th entry
(from 1) is the option taken at the k-th such decision, so a schedule is a list of small numbers,
and any schedule a sweep ran is replayed from it. A restart's decisions depend on what its state
left it to do, so a schedule for it is given otherwise: `first`, the threads by number in the order
they go first wherever they can (``3, 2, 1``: the last task submitted runs while it can, then the
one before), every thread it does not name after them, as by default.

What it cannot see: a thread started by `threading.Thread` (it runs unscheduled, as before), a
pool other than `ThreadPoolExecutor`, the order in which sockets outside the process become ready
(an asyncio task's own network I/O: its coroutines take turns on the loop's thread in the order
the loop finds them ready), and a wait on anything else (a lock, a queue, a `Condition`): a thread
that holds the baton and blocks there on a thread waiting for the baton deadlocks, and the run
fails as hung at the runner's time limit instead of being counted.
"""

from __future__ import annotations

import selectors
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from crashlab.errors import HarnessError

__all__ = ["Scheduler", "pause", "scheduling"]


@dataclass(eq=False)
class Thread:
    """One participant: the loop's thread (0) or a task (1, 2, ... in the order of submission)."""

    number: int
    state: str = "ready"  # "ready" (at a point, or not begun), "running", "blocked", "sleeping", "done"
    until: Callable[[], bool] = field(default=lambda: True)  # blocked: what lets it run again
    pool: Pool | None = None  # a task's pool, until it begins


@dataclass(eq=False)
class Pool:
    """A thread pool as the scheduler sees it: its tasks begin in the order they were submitted, at most
    `size` at once, so a task queued behind a busy worker is not one that can go on."""

    size: int
    queued: list[Thread] = field(default_factory=list)
    active: int = 0

    def can_begin(self, task: Thread) -> bool:
        return task in self.queued[: max(0, self.size - self.active)]


class Scheduler:
    """The baton, and every thread that may hold it. `picks` chooses at each decision with options."""

    def __init__(self, picks: Sequence[int] = (), note: Callable[..., None] | None = None, first: Sequence[int] = ()):
        self.picks = tuple(picks)
        self.first = tuple(first)
        self.note = note
        self.lock = threading.Condition(threading.Lock())
        self.threads: dict[int, Thread] = {}
        self.by_ident: dict[int, Thread] = {}
        self.holder: Thread | None = None
        self.decisions = 0  # decisions with more than one option, so far
        self.others = 0  # participants besides the loop's thread that are not done: 0 costs nothing
        self.pools: dict[int, Pool] = {}
        self.executors: list[Any] = []
        main = self._add()
        main.state = "running"
        self.holder = main
        self.by_ident[threading.get_ident()] = main

    def _add(self) -> Thread:
        thread = Thread(len(self.threads))
        self.threads[thread.number] = thread
        return thread

    def mine(self) -> Thread | None:
        """The calling thread's participant, if it holds the baton."""
        thread = self.by_ident.get(threading.get_ident())
        return thread if thread is not None and thread is self.holder else None

    # What the patched places call.

    def submitted(self, executor: Any) -> Thread | None:
        """A task submitted by the baton's holder to `executor`: known from now on, ready to begin when a
        worker of its pool is free."""
        with self.lock:
            if self.mine() is None:
                return None  # submitted by a thread the scheduler does not run: it runs unscheduled
            pool = self.pools.get(id(executor))
            if pool is None:
                pool = self.pools[id(executor)] = Pool(getattr(executor, "_max_workers", 1 << 30))
                self.executors.append(executor)  # kept alive, so that its id names no other pool
            self.others += 1
            task = self._add()
            task.pool = pool
            pool.queued.append(task)
            return task

    def begin(self, task: Thread) -> None:
        with self.lock:
            self.by_ident[threading.get_ident()] = task
            self._await(task)
            assert task.pool is not None
            task.pool.queued.remove(task)
            task.pool.active += 1

    def end(self, task: Thread) -> None:
        with self.lock:
            task.state = "done"
            self.others -= 1
            del self.by_ident[threading.get_ident()]
            if task.pool is not None:
                task.pool.active -= 1
            self._decide(task)

    def pause(self) -> None:
        """A scheduling point: the holder yields, and goes on when the decision gives it the baton back."""
        if not self.others:
            return
        with self.lock:
            me = self.mine()
            if me is None:
                return
            me.state = "ready"
            self._decide(me)
            self._await(me)

    @contextmanager
    def blocking(self, until: Callable[[], bool], sleeping: bool = False) -> Iterator[None]:
        """Around a wait on another thread: the baton goes on, and comes back once `until` holds. A thread that
        is `sleeping` polls for what another does: it can go on at any time, but every other thread goes first."""
        with self.lock:
            me = self.mine() if self.others else None
            if me is not None:
                me.state, me.until = "sleeping" if sleeping else "blocked", until
                self._decide(me)
        try:
            yield
        finally:
            if me is not None:
                with self.lock:
                    self._await(me)

    # The decision.

    def _decide(self, me: Thread) -> None:
        """Give the baton to one of the threads that can run: `me` first if it can, then by number."""
        can = [t for t in self.threads.values() if self._can_run(t)]
        can.sort(key=lambda t: (0 if t is me and t.state == "ready" else 2 if t.state == "sleeping" else 1, t.number))
        if not can:
            self.holder = None  # every thread blocked on something the scheduler does not see, or done
            self.lock.notify_all()
            return
        chosen = can[0]
        if len(can) > 1:
            pick = self.picks[self.decisions] if self.decisions < len(self.picks) else \
                1 + can.index(min(can, key=self._rank)) if self.first else 1
            if not 1 <= pick <= len(can):
                raise HarnessError(f"schedule decision {self.decisions + 1} has {len(can)} threads to choose "
                                   f"from, not {pick}")
            chosen = can[pick - 1]
            self.decisions += 1
            if self.note is not None:  # at a point, another thread than `me` preempts it; elsewhere none does
                among = ", ".join(str(t.number) for t in can)
                self.note("schedule", f"thread {chosen.number} goes on: decision {self.decisions}, option {pick} "
                          f"of threads {among}", thread=chosen.number, options=len(can), chose=pick,
                          threads=[t.number for t in can], preempts=can[0] is me, sleeps=me.state == "sleeping")
        elif chosen is not me and self.note is not None:  # no choice, but the story says who runs from here
            self.note("schedule", f"thread {chosen.number} goes on", thread=chosen.number, options=1, chose=1,
                      threads=[chosen.number], preempts=False)
        self.holder = chosen
        chosen.state = "granted"
        self.lock.notify_all()

    def _rank(self, t: Thread) -> int:
        """Where `first` puts a thread: those it names in its order, then every other."""
        return self.first.index(t.number) if t.number in self.first else len(self.first)

    @staticmethod
    def _can_run(t: Thread) -> bool:
        if t.state == "sleeping":
            return True
        if t.state == "blocked":
            return t.until()
        if t.state != "ready":
            return False
        return t.pool is None or t not in t.pool.queued or t.pool.can_begin(t)

    def _await(self, me: Thread) -> None:
        """Wait (holding the lock's condition) until `me` holds the baton; a thread finds it free takes it."""
        while self.holder is not me:
            if self.holder is None and me.state in ("ready", "blocked", "sleeping"):
                self.holder = me
                break
            self.lock.wait()
        me.state = "running"


#: The scheduler of the loop running in this process, if its threads are scheduled.
_scheduler: Scheduler | None = None


def pause() -> None:
    """At a crash point: let the scheduler choose who goes on (nothing, for a loop with one thread)."""
    if _scheduler is not None and _scheduler.others:
        _scheduler.pause()


@contextmanager
def scheduling(picks: Sequence[int] = (), note: Callable[..., None] | None = None,
               first: Sequence[int] = ()) -> Iterator[Scheduler]:
    """Schedule the threads of the loop this thread runs, as `picks` (then `first`) chooses, for the life of the
    block."""
    global _scheduler
    _patch()
    before, _scheduler = _scheduler, Scheduler(picks, note, first)
    try:
        yield _scheduler
    finally:
        _scheduler = before


class _Task:
    """A submitted function, with the participant that runs it."""

    def __init__(self, fn: Callable[..., Any], thread: Thread):
        self.fn, self.thread = fn, thread

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.fn(*args, **kwargs)


_patched = False
#: Set on a thread while it starts another (`Thread.start` waits for the new thread to begin).
_starting = threading.local()


def _patch() -> None:
    """Route the pool's tasks and the waits on them through the scheduler; once per process, and inert
    while no scheduler runs (a thread it does not know passes through)."""
    global _patched
    if _patched:
        return
    _patched = True
    import concurrent.futures.thread  # 10 ms of imports (logging's among them) that only a scheduled loop needs

    pool = concurrent.futures.ThreadPoolExecutor
    submit, run = pool.submit, concurrent.futures.thread._WorkItem.run
    event_wait, start, sleep = threading.Event.wait, threading.Thread.start, time.sleep
    result, exception = concurrent.futures.Future.result, concurrent.futures.Future.exception
    select = selectors.DefaultSelector.select  # asyncio's event loop waits in it

    def scheduled_submit(self: Any, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Any:
        task = _scheduler.submitted(self) if _scheduler is not None else None
        return submit(self, fn if task is None else _Task(fn, task), *args, **kwargs)

    def scheduled_run(self: Any, *args: Any) -> None:
        scheduler, fn = _scheduler, self.fn
        if scheduler is None or not isinstance(fn, _Task):
            return run(self, *args)
        scheduler.begin(fn.thread)
        try:
            return run(self, *args)  # the task, and its future's done callbacks
        finally:
            scheduler.end(fn.thread)

    def scheduled_sleep(seconds: float) -> None:
        if _scheduler is None or not _scheduler.others:
            return sleep(seconds)
        with _scheduler.blocking(lambda: True, sleeping=True):
            return sleep(seconds)

    def scheduled_start(self: threading.Thread) -> None:
        _starting.active = True  # its wait for the new thread to start is on no participant: never a decision
        try:
            start(self)
        finally:
            _starting.active = False

    def scheduled_wait(self: threading.Event, timeout: float | None = None) -> bool:
        if _scheduler is None or self.is_set() or getattr(_starting, "active", False):
            return event_wait(self, timeout)
        with _scheduler.blocking(self.is_set):
            return event_wait(self, timeout)

    def waiting(original: Callable[..., Any]) -> Callable[..., Any]:
        def scheduled(self: concurrent.futures.Future, timeout: float | None = None) -> Any:
            if _scheduler is None or self.done():
                return original(self, timeout)
            with _scheduler.blocking(self.done):
                return original(self, timeout)

        return scheduled

    def scheduled_select(self: selectors.DefaultSelector, timeout: float | None = None) -> Any:
        if _scheduler is None or (timeout is not None and timeout <= 0):
            return select(self, timeout)
        with _scheduler.blocking(lambda: bool(select(self, 0)), sleeping=timeout is not None):
            return select(self, timeout)

    pool.submit = scheduled_submit  # type: ignore[method-assign]
    concurrent.futures.thread._WorkItem.run = scheduled_run  # type: ignore[method-assign]
    threading.Thread.start = scheduled_start  # type: ignore[method-assign]
    time.sleep = scheduled_sleep  # type: ignore[assignment]
    threading.Event.wait = scheduled_wait  # type: ignore[method-assign]
    concurrent.futures.Future.result = waiting(result)  # type: ignore[method-assign]
    concurrent.futures.Future.exception = waiting(exception)  # type: ignore[method-assign]
    selectors.DefaultSelector.select = scheduled_select  # type: ignore[method-assign]
