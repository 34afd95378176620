"""Real deaths: every process of a scenario an OS process, killed by SIGKILL at its crash point.

In process, a crash is an exception, made as strict as a death by the recorder's refusals. Here it
is the kernel's: each process of a scenario is forked from this warm one (so it costs a fork, not
an interpreter start), runs the loop against a world in a SQLite file and a checkpoint in a real
file, and at its crash point sends itself SIGKILL. No handler, no ``finally``, no buffered write
runs after that, and no Python object crosses from one process to the next: the next one opens the
same two files and finds what was committed, nothing else. The parent only waits, and afterwards
reads every count from the database and the checkpoint from its file.

What the parent learns from the process itself is what a trace would tell: the crash points it
passed and the saves it began, written down a pipe by the harness's recorder just before the kill.
They check the run (did it die where it was told, did it retrace the run it repeats) and name the
scenarios; they count nothing.
"""

from __future__ import annotations

import os
import signal
import tempfile
import time
import traceback
from collections.abc import Callable
from functools import partial
from pathlib import Path

import msgspec

from crashlab.durable.state import Durable
from crashlab.durable.store import FileStore
from crashlab.engine.points import Crash, Event, HarnessError, Recorder, Where
from crashlab.engine.sweep import ScenarioRun, StoreFactory, Variant, check_death, check_finished, scenario_id
from crashlab.job import Job
from crashlab.world import World, WorldState
from crashlab.world.sqlite import TRACKER_FILE, Database, open_world, world_in


def die() -> None:
    """SIGKILL this process: the death that no code survives."""
    os.kill(os.getpid(), signal.SIGKILL)


class KillingRecorder(Recorder):
    """The sweep's recorder, for one real process: it never raises `Crash`, it dies by SIGKILL.

    At its `kill_at`-th point it calls `last_words` (the harness's report, if any) and kills itself;
    nothing of the loop runs after the point, not even a ``finally``. `echo` prints each point as it
    is passed (`crashlab run` shows them), `pace` sleeps at each, so a person can kill by hand.
    """

    def __init__(self, kill_at: int | None = None, pace: float = 0.0, echo: Callable[[str], None] | None = None,
                 last_words: Callable[[], None] | None = None, scenario: str = "run", process: int = 0):
        super().__init__((), scenario, process)
        self.kill_at = kill_at
        self.pace = pace
        self.echo = echo
        self.last_words = last_words

    def hit(self, label: str) -> None:
        super().hit(label)
        if self.echo is not None:
            self.echo(f"point {self.passed} {label}  {self.where}")
        if self.passed == self.kill_at:
            if self.last_words is not None:
                self.last_words()
            die()
        if self.pace:
            time.sleep(self.pace)


class Report(msgspec.Struct, array_like=True):
    """What one process tells the parent of its life: its points and saves, and how it ended."""

    events: list[tuple[str, str, int, str, str, int]]  # kind, label, turn, call, tool, index
    ended: str  # "killed" (at its point, as told), "returned", or the error that ended it


def run_scenario(variant: Variant, job: Job, crashes: tuple[int, ...], store: StoreFactory) -> ScenarioRun:
    """`sweep.run_scenario`, with every process forked here and killed for real at its crash point.

    `store` must make file stores: the scenario lives in the directory of the one it makes, the
    checkpoint beside the world's database, and a memory store cannot outlive a real death.
    """
    points = Recorder(crashes, scenario_id(variant.slug, crashes))
    first = store(points)
    if not isinstance(first, FileStore):
        raise ValueError("a real death needs the file store: a memory store dies with its process")
    directory = first.path.parent
    (directory / TRACKER_FILE).write_bytes(empty_world())
    start = None
    for _ in range(len(crashes) + 1):
        points.start_process()
        returned = live(variant, job, points, directory)
        check_death(points, returned)
        if points.dead is None:
            break
        if points.process == len(crashes):  # the last death: where the last process starts
            start = Durable(FileStore(directory, points, sync="none").files(), read_world(directory, job, variant))
    final = FileStore(directory, points, sync="none")
    world = World.restore(read_world(directory, job, variant), job, points)
    return ScenarioRun(variant, crashes, points, world, final, check_finished(points, final), start)


def forked(body: Callable[[Callable[[bytes], None]], None]) -> tuple[int, bytes]:
    """Run `body` in a child forked from this process, wait for it, and return its wait status and all it told.

    `body` gets `tell`, which writes bytes down a pipe to the parent. The child exits 0 if `body`
    returns and 1 if it raises, by `os._exit`: never the parent's exit handlers, never its buffered
    output. A body that tells and then dies (`die`) leaves its words behind.
    """
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: it never returns from here
        status = 1
        try:
            os.close(read)
            body(partial(_tell, write))
            status = 0
        finally:
            os._exit(status)
    os.close(write)
    with os.fdopen(read, "rb") as pipe:
        said = pipe.read()
    _, status = os.waitpid(pid, 0)
    return status, said


def _tell(fd: int, data: bytes) -> None:
    while data:
        data = data[os.write(fd, data):]


def killed(status: int) -> bool:
    return os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL


def returned(status: int) -> bool:
    return os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0


def live(variant: Variant, job: Job, points: Recorder, directory: Path) -> bool:
    """Fork the process `points.process` of the scenario, wait for its end, and note its life in `points`.

    True if it returned, False if it died at its crash point; anything else fails the scenario.
    """
    status, said = forked(partial(_child, variant, job, points, directory))
    where = f"{points.scenario}: process {points.process}"
    if not said:
        raise HarnessError(f"{where} ended (wait status {status}) without a word: killed by something else?")
    report = msgspec.msgpack.decode(said, type=Report)
    for kind, label, turn, call, tool, index in report.events:
        points.events.append(Event(points.process, kind, label, Where(turn, call, tool), index))
    passed = [e for e in points.events if e.process == points.process and e.kind == "point"]
    points.passed = len(passed)
    if report.ended == "killed" and killed(status):
        last = passed[-1]
        points.events.append(Event(points.process, "crash", last.label, last.where, last.index))
        points.dead = Crash(last.label, last.index)
        return False
    if report.ended == "returned" and returned(status):
        return True
    raise HarnessError(f"{where} failed: {report.ended}")


def _child(variant: Variant, job: Job, parent: Recorder, directory: Path, tell: Callable[[bytes], None]) -> None:
    """One process of the scenario: the loop against the files in `directory`, killed at its point."""
    process, crash_at = parent.process, parent.crash_at
    points = KillingRecorder(crash_at[process - 1] if process <= len(crash_at) else None,
                             scenario=parent.scenario, process=process - 1)

    def report(ended: str) -> None:
        events = [(e.kind, e.label, e.where.turn, e.where.call, e.where.tool, e.index)
                  for e in points.events if e.kind in ("point", "save")]
        tell(msgspec.msgpack.encode(Report(events, ended)))

    points.last_words = lambda: report("killed")
    try:
        points.start_process()
        with Database(directory / TRACKER_FILE) as db:
            world = open_world(db, job, points, variant.tracker_mode, desk=variant.desk)
            variant.loop(job, world, FileStore(directory, points, sync="none"), points).run()
        report("returned")
    except BaseException as error:  # noqa: BLE001 - the child reports every way it can end
        report(ended_by(error))


def ended_by(error: BaseException) -> str:
    """An error as one line, with the innermost line it came from."""
    frame = traceback.extract_tb(error.__traceback__)[-1]
    return f"{type(error).__name__}: {error} ({Path(frame.filename).name}:{frame.lineno})"


def read_world(directory: Path, job: Job, variant: Variant) -> WorldState:
    """What the world's database in `directory` holds now, read (never written) by the parent."""
    with Database(directory / TRACKER_FILE, readonly=True) as db:
        return world_in(db, job, Recorder(), variant.tracker_mode, desk=variant.desk).state()


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

