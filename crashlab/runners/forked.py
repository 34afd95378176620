"""The forked runner: every process of a scenario an OS process, killed by SIGKILL at its crash point.

Each process is forked from this warm one (so it costs a fork, not an interpreter start), runs the
loop against a world in a SQLite file and whatever the loop keeps in the run directory, and at its
crash point sends itself SIGKILL. No handler, no ``finally``, no buffered write runs after that, and
no Python object crosses from one process to the next: the next one opens the same files and finds
what was committed, nothing else. The parent only waits, and afterwards reads every count from the
files. It serves every loop alike: crashlab's, yours, a framework's; and `crashlab run` lives one
life the same way, in its own process (`life_in`).

What the parent learns from the process itself is what a trace would tell: its events (the crash
points it passed, its saves and requests), written down a pipe by its recorder as each is recorded,
by whichever thread records it, so the trace holds all the process did up to its death. They check
the run (did it die where it was told, did it retrace the run it repeats) and tell its story; they
count nothing.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import tempfile
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import ExitStack, contextmanager, suppress
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec

from crashlab.durable.checkpoint import Checkpoint
from crashlab.durable.content import content
from crashlab.durable.directory import Entries, Entry, put, taken
from crashlab.durable.state import Durable, Kept, OnDisk
from crashlab.durable.store import FileStore
from crashlab.errors import HarnessError
from crashlab.lifeline import dies_with
from crashlab.protocols.death import Choice, Left, chosen
from crashlab.protocols.fault import Machine
from crashlab.protocols.points import Crash, Event, Recorder, Where, recording
from crashlab.protocols.run import Run
from crashlab.protocols.runner import TIME_LIMIT
from crashlab.protocols.scenario import ScenarioRun, Setup, check_death, check_finished
from crashlab.protocols.variant import RunnerKind
from crashlab.runners.confined import check_inside, confine
from crashlab.runners.group import Boundary, Child, Hung, Outlived, entered
from crashlab.runners.group import die as group_die
from crashlab.runners.group import stop as group_stop
from crashlab.runners.output import Output, flush
from crashlab.runners.served import RUN_DIR, LoopFailed, Outside, Services, ended_by, refused_by, served_world
from crashlab.runners.turns import turns
from crashlab.scratch import remove, scratch
from crashlab.world import World, WorldState
from crashlab.world.sqlite import (
    TRACKER_FILE,
    Database,
    PersonFactory,
    SqlitePerson,
    TrackerFactory,
    open_world,
    world_in,
)

if TYPE_CHECKING:
    from crashlab.durable.fuse import Layer

#: Files of a run directory that are the harness's own, not the loop's state.
HARNESS_FILES = ("lock", "checkpoint.json.tmp")
#: The world's database, as SQLite keeps it: crashlab's, not the loop's.
WORLD_FILES = tuple(f"{TRACKER_FILE}{suffix}" for suffix in ("", "-wal", "-shm", "-journal"))


def die(group: bool = False) -> None:
    """SIGKILL this process (with `group`, every process it started: `crashlab.runners.group.die`): the death that
    no code survives, in this process or in a helper it forked or spawned."""
    if group:
        group_die()
    os.kill(os.getpid(), signal.SIGKILL)


class KillingRecorder(Recorder):
    """The recorder of one real process: it never raises `Crash`, it dies by SIGKILL.

    At its `kill_at`-th point it kills itself; nothing of the loop runs after the point, not even a
    ``finally``. With `trace`, each event goes to the harness as it is recorded, and the death is
    told before it comes; with `pause` too, at every other point it stops instead, as it would die
    there, for the harness to copy what such a death would leave. `echo` prints each point as it is
    passed (`crashlab run` shows them), `pace` sleeps at each, so a person can kill by hand.
    """

    def __init__(self, kill_at: int | None = None, pace: float = 0.0, echo: Callable[[str], None] | None = None,
                 trace: Trace | None = None, scenario: str = "run", process: int = 0, group: bool = False,
                 pause: bool = False):
        super().__init__((), scenario, process)
        self.kill_at = kill_at
        self.pace = pace
        self.echo = echo
        self.trace = trace
        self.group = group  # whether its death takes its process group: a sweep's process leads its own
        self.pause = pause

    def hit(self, label: str) -> None:
        super().hit(label)
        if self.trace is not None:
            self.trace.tell(self.events)
        if self.echo is not None:
            self.echo(f"point {self.passed} {label}  {self.where}")
        if self.passed == self.kill_at:
            if self.trace is not None:
                self.trace.end(self.events, "killed")
            die(self.group)
        if self.pause and self.trace is not None:
            self.trace.stop(self.group)
        if self.pace:
            time.sleep(self.pace)

    def note(self, kind: str, label: str = "", **detail: Any) -> None:
        super().note(kind, label, **detail)
        if self.trace is not None:
            self.trace.tell(self.events)


class Told(msgspec.Struct, array_like=True):
    """One message of a process to the parent: the events it recorded since the last, and, in its last, how it
    ended ("killed" at its point, as told; "returned"; or the error that ended it)."""

    events: list[tuple[str, str, int, str, str, int, dict[str, Any]]]  # kind, label, turn, call, tool, index, detail
    ended: str = ""


class Trace:
    """A process's events, told to the parent as they are recorded, by whichever thread records them.

    Told in one message just before the kill, a trace would leave out what the process's other threads
    did while it was written (`tests/test_process_tree.py`: a thread searching the tracker in a loop
    went untold at half the kill points). Each message is framed by its length and written whole under
    a lock, and the end holds the lock for good: no thread starts a message that the death would cut.
    """

    def __init__(self, say: Callable[[bytes], None]):
        self.say = say
        self.sent = 0
        self.lock = threading.RLock()  # re-entered only by a thread that failed while telling

    def tell(self, events: list[Event]) -> None:
        with self.lock:
            self._send(events, "")

    def end(self, events: list[Event], ended: str) -> None:
        self.lock.acquire()  # never released: the process ends next
        self._send(events, ended)

    def stop(self, group: bool) -> None:
        """Say "I stop here" (a frame of length 0) and stop, every thread at once, with `group` every process
        of the group too, as a death would take them: the harness copies the files and lets them go on."""
        with self.lock:
            self.say(bytes(4))
            if group:
                group_stop()
            else:
                os.kill(os.getpid(), signal.SIGSTOP)

    def _send(self, events: list[Event], ended: str) -> None:
        new, self.sent = events[self.sent:], len(events)
        if new or ended:
            said = msgspec.msgpack.encode(Told([(e.kind, e.label, e.where.turn, e.where.call, e.where.tool, e.index,
                                                  e.detail) for e in new], ended))
            self.say(len(said).to_bytes(4, "big") + said)


def heard(said: bytes, where: str) -> tuple[list[Told], str]:
    """Every message a process told, and how it said it ended ("" if it never said)."""
    told, at = [], 0
    while at < len(said):
        size = int.from_bytes(said[at:at + 4], "big")
        if at + 4 + size > len(said):
            raise HarnessError(f"{where} was cut off in the middle of telling an event")
        if size:  # a frame of length 0 said it stopped (`Trace.stop`)
            told.append(msgspec.msgpack.decode(said[at + 4:at + 4 + size], type=Told))
        at += 4 + size
    return told, next((t.ended for t in told if t.ended), "")


def life_in(directory: Path, setup: Setup, points: Recorder, person: PersonFactory = SqlitePerson,
            sync: str = "none", tracker: TrackerFactory | None = None) -> None:
    """One life of `setup`'s loop, in this process, over the files in `directory`: the child's, or `crashlab run`'s
    (whose tracker may be a running service instead, `tracker`)."""
    variant = setup.variant
    with recording(points), turns(setup, points), \
            Database(directory / TRACKER_FILE) as db:
        world = open_world(db, setup.job, points, variant.tracker, person, desk=variant.desk, tracker=tracker,
                           profile=setup.profile)
        store = FileStore(directory, points, sync=sync)
        variant.entry(Run(setup.job, world, store, directory, points.process, points))


class Forked:
    """Forks each process of a scenario from this one, and kills it for real at its crash point."""

    kind: RunnerKind = "forked"

    def __init__(self, fresh: Fresh, services: Services, limit: float = TIME_LIMIT):
        self.fresh = fresh
        self.services = services
        self.limit = limit

    @classmethod
    @contextmanager
    def opened(cls, limit: float = TIME_LIMIT) -> Iterator[Forked]:
        with directories() as fresh, Services() as services:
            yield cls(fresh, services, limit)

    def scenario(self, setup: Setup, crashes: tuple[int, ...], choices: tuple[Choice, ...] = (),
                 watch: bool = False) -> ScenarioRun:
        warm(setup)
        points = Recorder(crashes, setup.id(crashes, choices))
        # A page cache a fault can cut, where one asks for it; the layer that tells a program's file operations, where
        # its variant asks for them: one layer, either way.
        directory, layer = self.fresh(setup.faults.cuts, setup.variant.fs_points, ())
        outside = Outside.of(setup, self.services, choices)  # None: the loop acts through run.world

        def world_now() -> WorldState:
            return read_world(directory, setup) if outside is None else outside.state()

        start, stuck = None, None
        for _ in range(len(crashes) + 1):
            points.start_process()
            note_found(points, directory, setup)
            try:
                returned = live(setup, points, directory, limit=self.limit) if outside is None else \
                    outside.live(points, directory, partial(live, limit=self.limit), self.limit, fs=told(layer),
                                 cache=layer if setup.faults.cuts else None)
            except LoopFailed as failed:
                if not (crashes or setup.faults):
                    raise refused_by(failed, setup, points) from None  # it fails by itself, or its contract refused it
                if points.process <= len(crashes):
                    raise  # it fails before the point it reached before: not deterministic
                stuck = failed.why  # it cannot go on in what the deaths (or the faults) left: an outcome
                points.note("failed", failed.why)
                break
            check_death(points, returned)
            if points.dead is None:
                break
            choice = choices[points.process - 1] if points.process <= len(choices) else ()
            if outside is not None:  # the state its choice names, among those the service's faults leave here
                chosen(outside.left(points.points(points.process)[-1]), choice, points)
            # The process is dead, with every process it started: only now may a fault act on its machine.
            setup.faults.died(Machine(layer if setup.faults.cuts else None, points.note,
                                      outside.cut(choice) if outside is not None else None))
            if points.process == len(crashes):  # the last death: where the last process starts, as sharing sees it
                start = Left(on_disk(directory, setup, outside, raw=False) if outside and shares(setup) else
                             Durable(files_of(directory, setup, by_content=False), world_now()))
        world, store, final = ended(setup, points, directory, world_now(), stuck)
        # What a death at each point leaves: a crash's one state, or the states the service's faults make of it.
        one: list[Iterable[Left]] = [(Left(None),)]
        deaths = [one if outside is None else outside.left(point) for point in points.points(points.process)] \
            if watch else None
        return ScenarioRun(setup, crashes, choices, points, world, store, final, stuck is None, start, stuck, (),
                           deaths)

    def life(self, setup: Setup, start: Left | None, crashes: tuple[int, ...], choices: tuple[Choice, ...],
             watch: bool) -> ScenarioRun:
        """One process, from the files (and the service's rows) `start` holds, or from nothing; with `watch`, it
        stops at each of its points for a copy of what a death there would leave. For a loop that `shares`."""
        assert shares(setup), f"{setup.variant.slug} keeps state the forked runner does not copy"
        warm(setup)
        points = Recorder((), setup.id(crashes, choices), process=len(crashes))
        state = start.state if start is not None else None
        assert state is None or isinstance(state, OnDisk), "a restart of a real process starts from files"
        directory, layer = self.fresh(False, setup.variant.fs_points, state.raw() if state is not None else ())
        outside = Outside.of(setup, self.services, choices)  # a served loop's service, emptied
        if state is not None and outside is not None:
            assert state.service is not None, "a served loop's snapshot holds its service's rows"
            outside.load(state.service)
        deaths: list[list[Iterable[Left]]] = []
        # Copied from under the layer, if there is one: at its own point it holds the operation the process stands in,
        # and serves nothing else until the harness answers.
        files = directory if layer is None else layer.backing
        stopped = (lambda: deaths.append([(Left(on_disk(files, setup, outside)),)])) if watch else None
        points.start_process()
        note_found(points, directory, setup)
        stuck = None
        try:
            returned = live(setup, points, directory, limit=self.limit, stopped=stopped) if outside is None else \
                outside.live(points, directory, partial(live, limit=self.limit), self.limit, stopped, told(layer))
            check_death(points, returned)
        except LoopFailed as failed:
            if start is None:  # the first process fails by itself: not deterministic, broken, or refused
                raise refused_by(failed, setup, points) from None
            stuck = failed.why  # it cannot go on in what the death left: an outcome, as `scenario` counts it
            points.note("failed", failed.why)
        world, store, final = ended(setup, points, directory,
                                    read_world(directory, setup) if outside is None else outside.state(), stuck)
        return ScenarioRun(setup, crashes, choices, points, world, store, final, stuck is None, start, stuck, (),
                           deaths if watch else None)


def ended(setup: Setup, points: Recorder, directory: Path, left: WorldState,
          stuck: str | None) -> tuple[World, FileStore, Checkpoint | None]:
    """What a scenario's last process left: the world as `left` holds it, the run directory's store, and the
    checkpoint it finished with (for a loop that keeps crashlab's, and went on to the end)."""
    world = World.new(setup.job, points, setup.variant.tracker, desk=setup.variant.desk, profile=setup.profile)
    world.restore(left)
    store = FileStore(directory, points, sync="none")
    final = check_finished(points, store) if stuck is None and setup.variant.keeps_checkpoint else None
    return world, store, final


def told(layer: Layer | None) -> socket.socket | None:
    """The line down which `layer` tells a program's file operations, if it tells them: its current mount's."""
    return layer.line if layer is not None else None


def warm(setup: Setup) -> None:
    """Import the loop's framework here, once, rather than in every process forked from here."""
    load = getattr(setup.variant.entry, "load", None)
    if load is not None:
        load()


def shares(setup: Setup) -> bool:
    """Whether the forked runner can start `setup`'s restarts from copies of what a death left, and so share them.

    Only under the crash alone (a fault's states are more than a copy), and only for a loop that keeps
    all it keeps in its run directory (`Variant.kept_in_directory`: crashlab's own loops, and the
    runtimes checked to), beside the world crashlab holds for it (its tracker file, or the service's):
    then a copy of those, taken where the process stands stopped, is what its death there leaves. A
    loop of yours may keep state where no copy reaches, and is re-executed, every scenario.
    """
    variant = setup.variant
    return variant.kept_in_directory and variant.stands_in is None and not setup.faults


def on_disk(directory: Path, setup: Setup, outside: Outside | None = None, raw: bool = True) -> OnDisk:
    """What a death now would leave: every entry of the run directory as the file system holds it
    (`crashlab.durable.directory`), and their content as a value (`raw`, for a restart from a copy); or, not
    `raw`, what a re-executed scenario's last death left, its entries as the value (`files_of`); and a served
    loop's service, row by row."""
    entries = taken(directory)
    kept, entries = files_of(directory, setup, entries, by_content=raw), entries if raw else ()
    if outside is None:
        return OnDisk.taken(kept, read_world(directory, setup), entries)
    dumped = outside.dump()
    return OnDisk.taken(kept, served_world(setup, dumped.state()), entries, dumped)


def note_found(points: Recorder, directory: Path, setup: Setup) -> None:
    """Note the files the process about to start finds in its run directory, each by its size. A loop that keeps
    crashlab's checkpoint says what it loaded; any other keeps files only it can read, and without this note a
    story could not say what a restart resumed from (`crashlab explain`)."""
    if not setup.variant.keeps_checkpoint:
        files = sorted(p for p in directory.rglob("*") if p.is_file())
        points.note("found", files=[[name, path.stat().st_size] for path in files
                                    if (name := path.relative_to(directory).as_posix()) not in HARNESS_FILES
                                    and name not in WORLD_FILES])


def live(setup: Setup, points: Recorder, directory: Path, env: Mapping[str, str] | None = None,
         limit: float = TIME_LIMIT, stopped: Callable[[], None] | None = None) -> bool:
    """Fork the process `points.process` of the scenario, wait for its end, and note its life in `points`.

    True if it returned, False if it died at its crash point; anything else fails the scenario, and a
    process that runs past `limit` seconds fails it as `LoopFailed`, hung. With `stopped`, the process
    stops at each point it passes alive, and `stopped()` runs while it stands there.
    """
    where = f"{points.scenario}: process {points.process}"
    output = Output()
    try:
        status, said = forked(partial(_child, setup, points, directory, env, stopped is not None), output, limit,
                              stopped)
    except Hung as hung:
        raise LoopFailed(where, str(hung)) from None
    except Outlived as outlived:
        raise outlived.named(points.scenario, points.process) from None
    finally:
        output.noted(points)
    told, ended = heard(said, where)
    if not ended:
        raise HarnessError(f"{where} ended (wait status {status}) without a word: killed by something else?")
    for message in told:
        for kind, label, turn, call, tool, index, detail in message.events:
            points.events.append(Event(points.process, kind, label, Where(turn, call, tool), index, detail))
    passed = points.points(points.process)
    points.passed = len(passed)
    if ended == "killed" and killed(status):
        last = next(p for p in passed if p.index == points.crash_at[points.process - 1])
        points.events.append(Event(points.process, "crash", last.label, last.where, last.index))
        points.dead = Crash(last.label, last.index)
        return False
    if ended == "returned" and returned(status):
        return True
    check_inside(where, ended)
    raise HarnessError(f"{where} failed: {ended}")


def _child(setup: Setup, parent: Recorder, directory: Path, env: Mapping[str, str] | None, pause: bool,
           tell: Callable[[bytes], None]) -> None:
    """One process of the scenario: the loop against the files in `directory`, killed (or paused) at its point."""
    process, crash_at = parent.process, parent.crash_at
    trace = Trace(tell)
    points = KillingRecorder(crash_at[process - 1] if process <= len(crash_at) else None, trace=trace,
                             scenario=parent.scenario, process=process - 1, group=True, pause=pause)
    try:
        points.start_process()
        if env is not None:  # a service of yours: where it is, and where the loop keeps its files
            os.environ.update({**env, RUN_DIR: str(directory)})
        os.chdir(directory)  # a file the loop names by a relative path is its run's, not one of the user's
        if setup.variant.on_its_word:  # its word that it keeps all in its run directory: it may write nowhere else
            confine(directory, entered())
        life_in(directory, setup, points)
        trace.end(points.events, "returned")
    except BaseException as error:
        trace.end(points.events, ended_by(error))


def forked(body: Callable[[Callable[[bytes], None]], None], output: Output, limit: float = TIME_LIMIT,
           stopped: Callable[[], None] | None = None) -> tuple[int, bytes]:
    """Run `body` in a child forked from this process, wait for it, and return its wait status and all it told.

    `body` gets `tell`, which writes bytes down a pipe to the parent. The child exits 0 if `body`
    returns and 1 if it raises, by `os._exit`: never the parent's exit handlers, never its buffered
    output. A body that tells and then dies (`die`) leaves its words behind. The child is in a
    cgroup of its own and leads a process group (`Boundary`), and when it ends, whatever it started
    that still runs is killed: a helper it forked or spawned never outlives it, nor the child this
    process; `Outlived` if one left the boundary and was alive after that kill. `Hung` if it runs
    past `limit` seconds; if this process is interrupted meanwhile, the child's group is killed
    before the interruption goes on.
    Each time the child says it stops (`Trace.stop`), `stopped()` runs once it has, and then it goes on.
    The child's stdout and stderr go down `output`'s pipes, read as they come: never to this process's.
    """
    read, write = os.pipe()
    parent = os.getpid()
    boundary = Boundary.new()
    pid = os.fork()
    if pid == 0:  # the child: it never returns from here
        status = 1
        try:
            boundary.enter()
            dies_with(parent, signal.SIGKILL)
            os.close(read)
            output.redirect()
            body(partial(_tell, write))
            status = 0
        finally:
            flush()
            os._exit(status)
    os.close(write)
    output.opened()
    child = Child(pid, limit, boundary)
    try:
        said = bytearray()
        is_open = _heard(read, child, said, stopped, output)
        status = child.reap()  # what it left running dies here, before its last words are read
        if is_open:
            os.set_blocking(read, False)
            with suppress(BlockingIOError):
                while chunk := os.read(read, 1 << 16):
                    said += chunk
        output.drain()
    except BaseException:
        child.end()
        raise
    finally:
        os.close(read)
        output.close()
    return status, bytes(said)


def _heard(read: int, child: Child, said: bytearray, stopped: Callable[[], None] | None, output: Output) -> bool:
    """Take what the child writes down the pipe until it ends, and what it prints as it comes; whether the pipe is
    still open. The child's end is watched, not the pipe's: a helper that inherited the pipe may hold it open after
    the child is gone."""
    is_open, at = True, 0
    ended = os.pidfd_open(child.pid)
    try:
        while True:
            ready = child.ready([read, ended, *output.fds] if is_open else [ended, *output.fds])
            if ended in ready:
                return is_open
            for printed in set(ready) & set(output.fds):
                output.take(printed)
            if read not in ready:
                continue
            chunk = os.read(read, 1 << 16)
            said += chunk
            is_open = bool(chunk)
            if stopped is not None:
                at = _stops(said, at, child, stopped)
    finally:
        os.close(ended)


def _stops(said: bytearray, at: int, child: Child, stopped: Callable[[], None]) -> int:
    """Past every whole frame from `at`; at each that says the child stops, `stopped()` while it stands stopped."""
    while at + 4 <= len(said):
        size = int.from_bytes(said[at:at + 4], "big")
        if at + 4 + size > len(said):
            break
        at += 4 + size
        if not size and child.stopped():
            try:
                stopped()
            finally:
                child.resume()
    return at


def _tell(fd: int, data: bytes) -> None:
    while data:
        data = data[os.write(fd, data):]


def killed(status: int) -> bool:
    return os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL


def returned(status: int) -> bool:
    return os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0


def read_world(directory: Path, setup: Setup) -> WorldState:
    """What the world's database in `directory` holds now, read (never written) by the parent."""
    with Database(directory / TRACKER_FILE, readonly=True) as db:
        return world_in(db, setup.job, Recorder(), setup.variant.tracker, desk=setup.variant.desk,
                        profile=setup.profile).state()


def files_of(directory: Path, setup: Setup, entries: Entries | None = None, by_content: bool = True) -> Kept:
    """What the loop keeps in `directory` (whose `entries` these are, if taken already), as a value: crashlab's
    checkpoint, or every entry a loop of yours (or a runtime) made, in subdirectories too (by its path in
    `directory`), as the Microsoft Agent Framework keeps its checkpoints and Prefect its results.

    `by_content`, a database is what a restart reads in it, not its pages (`crashlab.durable.content`): so a
    shared sweep, whose states are copies taken with the process stopped, restarts once for each. Not
    `by_content`, each entry is its mode and bytes: a re-executed sweep's states are what killed processes
    left, and a runtime's left content varies from run to run where it races (in what the stamps it names do
    not cover), so a count of them could differ between two sweeps of one job; by bytes, each such state is its
    own. Not by its times, which differ in every run: two sweeps of one job count the same states."""
    if setup.variant.keeps_checkpoint:
        return FileStore(directory, Recorder(), sync="none").files()
    theirs = loops_own(taken(directory) if entries is None else entries)
    if by_content:
        return content(theirs, setup.variant.volatile, setup.variant.minted)
    return tuple((name, mode, data) for name, mode, data, _ in theirs)


def loops_own(entries: Iterable[Entry]) -> Entries:
    """Those of a run directory's `entries` that are the loop's: all but the world's database, which the state holds
    as the world (the directory itself, ".", is the loop's as it left it: its mode). A loop's file of any other
    name is its own, one named as a file of crashlab's own store or of `crashlab run` too: no sweep makes one."""
    return tuple(e for e in entries if e[0] not in WORLD_FILES)


#: A scenario's run directory, and the file-system layer it sits on, if its machine's power is cut at each death
#: (`cuts`) or its program's file operations are crash points (`tells`), holding `files` (a restart's copy) first.
Fresh = Callable[[bool, bool, Entries], "tuple[Path, Layer | None]"]


@contextmanager
def directories() -> Iterator[Fresh]:
    """Fresh scenario directories under one root (on /dev/shm when there is one), each with an empty world.

    Each new directory removes the one before, so the root holds one scenario at a time. One whose
    machine `cuts` power at each death sits on the power-cut layer (`crashlab.durable.fuse`): the loop
    sees the layer's mount, and each death's cut leaves in the directory only what its syncs made
    durable. One whose program's file operations are points (`tells`) sits on the same layer, which
    tells each. The layer is unmounted with its scenario, or when the runner closes, however it ends.
    The `files` a restart starts from are written before it is mounted: the harness's writes are no
    program's points.
    """
    root = scratch("loop")
    made: list[Path] = []
    with ExitStack() as mounted:

        def fresh(cuts: bool = False, tells: bool = False, files: Entries = ()) -> tuple[Path, Layer | None]:
            mounted.close()
            for old in made:
                shutil.rmtree(old, ignore_errors=True)
            made[:] = [Path(tempfile.mkdtemp(dir=root))]
            (made[0] / TRACKER_FILE).write_bytes(empty_world())
            put(made[0], files)
            if not (cuts or tells):
                return made[0], None
            from crashlab.durable.fuse import Layer

            layer = mounted.enter_context(Layer.over(made[0], tells))
            return layer.mountpoint, layer

        try:
            yield fresh
        finally:
            mounted.close()
            remove(root)


_empty: bytes = b""


def empty_world() -> bytes:
    """The bytes of a world's database with its schema and nothing else, made once per process.

    Each scenario's world starts as a copy: making the schema is most of the cost of a new file.
    """
    global _empty
    if not _empty:
        with tempfile.TemporaryDirectory() as scratch:
            path = Path(scratch) / TRACKER_FILE
            Database(path).close()
            _empty = path.read_bytes()
    return _empty
