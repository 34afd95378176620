"""The in-process runner: every life of a scenario in this process, each crash an exception.

A crash is `Crash`, a BaseException no ``except Exception`` catches, and the recorder refuses
whatever the dead process still tries (a save, a request, a point) and fails the scenario. A
restart is a new loop over the world and store the death left. Where a fault makes the death leave
something else (a power cut's disk, a crashed tracker's durable part, a downtime), the restart's
world and store are built from that value; so is every restart of a shared sweep, from the
snapshot taken where the death would be, which is exactly what a SIGKILL there leaves.
"""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
import threading
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from crashlab.durable.checkpoint import CheckpointError
from crashlab.durable.store import FileStore, MemoryStore, Store, StoreKind
from crashlab.errors import HarnessError
from crashlab.protocols.death import Choice, Death, Left, chosen
from crashlab.protocols.points import Crash, Recorder, recording
from crashlab.protocols.run import Run
from crashlab.protocols.scenario import ScenarioRun, Setup, check_death, check_finished
from crashlab.protocols.variant import RunnerKind
from crashlab.scratch import remove, scratch
from crashlab.world import World, WorldState

#: Makes a fresh checkpoint store for a process's recorder, syncing as the second argument says.
StoreFactory = Callable[[Recorder, str], Store]


class InProcess:
    """Runs each life here: snapshots give prefix sharing, and a fault may swap the world's parts."""

    kind: RunnerKind = "in-process"

    def __init__(self, stores: StoreFactory):
        self.stores = stores

    @classmethod
    @contextmanager
    def opened(cls, store: StoreKind = "memory") -> Iterator[InProcess]:
        """A runner over stores of `store`'s kind, cleaned up when the block ends."""
        if store == "files":
            with file_stores() as factory:
                yield cls(factory)
        else:
            yield cls(memory_store)

    def scenario(self, setup: Setup, crashes: tuple[int, ...], choices: tuple[Choice, ...] = (),
                 watch: bool = False) -> ScenarioRun:
        faults = setup.faults
        if faults.chooses and len(choices) != len(crashes):
            raise ValueError("a scenario under a fault that chooses names a choice for every crash")
        if len(crashes) > faults.depth(len(crashes)):
            raise ValueError(f"under {faults.name} a scenario crashes at most {faults.depth(len(crashes))} times")
        points = Recorder(crashes, setup.id(crashes, choices))
        before = Leftovers.now()
        world, store = self.build(setup, points, None)
        start, stuck, left = None, None, []
        deaths: list[list[Iterable[Left]]] = []
        for k in range(len(crashes) + 1):
            points.start_process()
            if watch and k == len(crashes):  # the states, where a fault may make them more than a crash's
                def watched(world: World = world, store: Store = store) -> None:
                    deaths.append(faults.left(Death(world, store, points)) if faults else [(Left(None),)])

                points.observers.append(watched)
            returned, stuck = self._live(setup, world, store, points)
            check_death(points, returned, stuck)
            if points.dead is None:
                break
            start = chosen(faults.left(Death(world, store, points)), choices[k] if choices else (), points)
            left.append(start.what)
            if start.rebuild:
                world, store = self.build(setup, points, start)
        Leftovers.now().check(before, points)
        return self._ended(setup, crashes, choices, points, world, store, start, stuck, tuple(left),
                           deaths if watch else None)

    def life(self, setup: Setup, start: Left | None, crashes: tuple[int, ...], choices: tuple[Choice, ...],
             watch: bool) -> ScenarioRun:
        points = Recorder((), setup.id(crashes, choices), process=len(crashes))
        world, store = self.build(setup, points, start)
        deaths: list[list[Iterable[Left]]] = []
        if watch:
            points.observers.append(lambda: deaths.append(setup.faults.left(Death(world, store, points))))
        points.start_process()
        before = Leftovers.now()
        returned, stuck = self._live(setup, world, store, points)
        Leftovers.now().check(before, points)
        check_death(points, returned, stuck)
        left = (start.what,) if start and start.what else ()
        return self._ended(setup, crashes, choices, points, world, store, start, stuck, left, deaths if watch else None)

    def build(self, setup: Setup, points: Recorder, start: Left | None) -> tuple[World, Store]:
        """The world and store a process opens its eyes to: fresh (or what the faults begin with), or `start`'s."""
        state: WorldState | None = None
        if start is None:
            state = setup.faults.begin(lambda: self.earlier(setup, points))
        elif start.state is not None:
            state = start.state.world
        store = self.stores(points, setup.faults.sync())
        variant = setup.variant
        world = World.new(setup.job, points, variant.tracker, desk=variant.desk, parts=setup.faults.parts(),
                          profile=setup.profile)
        if state is not None:
            world.restore(state)
        if start is not None and start.state is not None:
            store.restore(start.state.files)
        return world, store

    def earlier(self, setup: Setup, points: Recorder) -> WorldState:
        """The world an earlier run of the job left, uninterrupted, in a world and store of its own."""
        before = Recorder((), f"{points.scenario}, the earlier run", process=-1)
        variant = setup.variant
        world = World.new(setup.job, before, variant.tracker, desk=variant.desk, profile=setup.profile)
        before.start_process()
        with recording(before):
            variant.entry(Run(setup.job, world, self.stores(before, "none"), None, 0, before))
        return world.state()

    @staticmethod
    def _live(setup: Setup, world: World, store: Store, points: Recorder) -> tuple[bool, str | None]:
        """Run one process: whether it returned, and why it could not start if its checkpoint was unreadable."""
        with recording(points):
            try:
                setup.variant.entry(Run(setup.job, world, store, None, points.process, points))
                return True, None
            except Crash:
                return False, None
            except CheckpointError as error:
                return False, str(error)

    @staticmethod
    def _ended(setup: Setup, crashes: tuple[int, ...], choices: tuple[Choice, ...], points: Recorder, world: World,
               store: Store, start: Left | None, stuck: str | None, left: tuple[str, ...],
               deaths: list[list[Iterable[Left]]] | None) -> ScenarioRun:
        if stuck is None:
            world.finish()
        final = check_finished(points, store) if stuck is None and setup.variant.keeps_checkpoint else None
        return ScenarioRun(setup, crashes, choices, points, world, store, final, stuck is None, start, stuck, left,
                           deaths)


@dataclass(frozen=True)
class Leftovers:
    """What runs beside this process, or after it: its threads, its child processes, its atexit handlers.

    A process here is a call, and its death an exception: nothing it started in the background dies
    with it. So a scenario whose processes leave a thread or a child process running, or an atexit
    handler to run, is refused: what those did after a death would be counted. It is checked once a
    scenario (once a life, where lives are shared), not at each process: it costs microseconds, and
    a sweep that re-executes every scenario lives hundreds of thousands of processes."""

    threads: frozenset[int]
    children: frozenset[int]
    at_exit: int

    @classmethod
    def now(cls) -> Leftovers:
        threads = frozenset(t.ident for t in threading.enumerate() if t.ident is not None and t.is_alive())
        return cls(threads, _children(), atexit._ncallbacks())

    def check(self, before: Leftovers, points: Recorder) -> None:
        """Refuse, as a `HarnessError`, what the life since `before` left behind."""
        where = points.scenario
        why = "in process no death stops it, so what it does after one would be counted: sweep the loop forked (--kill)"
        if threads := self.threads - before.threads:
            names = ", ".join(sorted(t.name for t in threading.enumerate() if t.ident in threads))
            raise HarnessError(f"{where} left a thread running ({names}): {why}")
        if children := self.children - before.children:
            raise HarnessError(f"{where} left a child process running (pid {', '.join(map(str, sorted(children)))}): "
                               f"{why}")
        if self.at_exit > before.at_exit:
            raise HarnessError(f"{where} registered an atexit handler: in process it runs once, when the sweep "
                               "exits, not at each death: sweep the loop forked (--kill)")


def _children() -> frozenset[int]:
    """The pids of this process's living children, whichever of its threads started them (Linux's /proc).

    Plain `os` calls, not `pathlib`: it runs twice in every life, and a sweep re-executing every
    scenario lives hundreds of thousands."""
    found: set[int] = set()
    try:
        tasks = os.listdir("/proc/self/task")
    except OSError:
        return frozenset()  # no /proc: nothing to look at
    for task in tasks:
        try:
            fd = os.open(f"/proc/self/task/{task}/children", os.O_RDONLY)
        except OSError:
            continue  # a thread that ended, or a kernel without the children file
        try:
            found.update(int(pid) for pid in os.read(fd, 1 << 16).split())
        finally:
            os.close(fd)
    return frozenset(found)


def memory_store(points: Recorder, sync: str) -> Store:
    return MemoryStore(points, sync)


@contextmanager
def file_stores() -> Iterator[StoreFactory]:
    """A factory of file stores, each in a fresh directory under one temporary root.

    The root is on the RAM-backed /dev/shm when the machine has one: the sweep measures the loop,
    not the disk. An fsync does nothing there, and no figure depends on one: a process crash loses
    nothing the kernel holds, and a power cut is modelled over the store's record of its saves
    (`crashlab.durable.disk`), never inflicted on the files. Each new store removes the directory of
    the one before, so the root holds one scenario at a time: a store is valid until the next one is
    made, which is all a sweep needs.
    """
    root = scratch("store")
    previous: list[str] = []

    def fresh(points: Recorder, sync: str) -> FileStore:
        for directory in previous:
            shutil.rmtree(directory, ignore_errors=True)
        previous[:] = [tempfile.mkdtemp(dir=root)]
        return FileStore(previous[0], points, sync)

    try:
        yield fresh
    finally:
        remove(root)
