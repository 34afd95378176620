"""`crashlab run`: the agent's own loop as a real program, which a real kill -9 can stop anywhere.

A run directory holds everything that outlives the process: ``tracker.sqlite`` (the world: tracker,
person's and model's counts, approval desk), ``checkpoint.json`` (the loop's progress, fsynced) and
``lock``. Nothing else carries over from one process to the next, so running the same command again
after a death resumes from exactly what was durable, as a real agent restarts after a real crash.

The process passes the same crash points as the sweep, and can die at one on purpose (`--crash-at`,
a real SIGKILL) or pause at each (`--pace`) so that someone can kill it by hand where they choose.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import sqlite3
import stat
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from functools import partial
from pathlib import Path
from typing import Any

from crashlab.durable.checkpoint import Checkpoint, CheckpointError, TurnRecord
from crashlab.durable.store import CHECKPOINT, FileStore
from crashlab.errors import BadInput
from crashlab.fsync import sync_directory
from crashlab.job import Call, Job
from crashlab.job.reader import shown
from crashlab.loops import VARIANTS
from crashlab.loops.agent import Agent
from crashlab.loops.keys import key
from crashlab.protocols.points import Recorder
from crashlab.protocols.scenario import Setup
from crashlab.runners.forked import KillingRecorder, life_in
from crashlab.world import TRACKER_MODES, Record, TrackerMode
from crashlab.world.remote import RemoteTracker, served_mode
from crashlab.world.sqlite import (
    ASIDE,
    CLAIMS,
    SIDE_FILES,
    TRACKER_FILE,
    Database,
    PersonFactory,
    SqlitePerson,
    WorldError,
    check_claims,
    claims,
    create,
)

LOCK_FILE = "lock"
#: Every entry crashlab makes in a run directory, each a regular file: anything else in one of these
#: places (a symlink, a directory, a FIFO) was put there by another hand, and writing through it
#: could overwrite a file outside the directory, or hang.
ENTRIES = (LOCK_FILE, CHECKPOINT, f"{CHECKPOINT}.tmp",
           *(f"{tracker}{suffix}" for tracker in (TRACKER_FILE, TRACKER_FILE + ASIDE) for suffix in ("", *SIDE_FILES)))


class RunError(BadInput):
    """A run that must not start: the message is one line naming the directory and the problem."""


@contextmanager
def locked(directory: Path) -> Iterator[None]:
    """Hold an exclusive OS lock on the run directory itself, or refuse at once if another process has it.

    The lock is the directory's, not a file's in it: a lock file deleted from under a run would let
    the next run lock a new file of the same name and act beside it, but a directory holding files
    cannot be deleted. `flock` belongs to the open file, so the kernel releases it however the
    holder dies: a killed run never leaves a stale lock behind. DIR/lock only names the holder's pid,
    written by the holder once it is sure to run (`write_pid`): a refused run leaves nothing behind.
    """
    try:
        fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError as error:
        raise RunError(f"cannot open run directory {directory}: {error.strerror}") from None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise RunError(f"{directory} is in use by another crashlab run (pid {holder(directory)}); wait for it "
                           "to end") from None
        RunDir(directory).check_entries()
        yield
    finally:
        os.close(fd)


def holder(directory: Path) -> str:
    """The pid the lock's holder wrote in DIR/lock, or "?": read without following a link or blocking."""
    try:
        fd = os.open(directory / LOCK_FILE, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return "?"
    try:
        return os.read(fd, 32).decode(errors="replace").strip() or "?"
    except OSError:
        return "?"
    finally:
        os.close(fd)


def write_pid(path: Path) -> None:
    """Write this process's pid to DIR/lock, never through a link another hand put in its place."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, 0o644)
    except OSError as error:
        raise RunError(f"cannot write {path}: {error.strerror}") from None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise RunError(f"{path} is not the file crashlab made; remove it")
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
    except OSError as error:
        raise RunError(f"cannot write {path}: {error.strerror}") from None
    finally:
        os.close(fd)


class NoPerson(SqlitePerson):
    """Refuses every gated call and denies every call happened: what a wrong "no" costs shows."""

    def answer(self, call: Call, made: list[Record]) -> int | None:
        return None

    def decide(self, call: Call) -> bool:
        return False


#: `--person`: who answers the loop's questions, but for the person at a terminal, whom the command
#: line brings. `auto` and `yes` are the sweep's scripted person: it answers from the tracker's records
#: (it cannot give a number the tracker does not hold) and approves every gated call.
PERSONS: dict[str, PersonFactory] = {
    "yes": partial(SqlitePerson, approves=True),
    "no": NoPerson,
    "auto": SqlitePerson,
}


@dataclass(frozen=True)
class RunDir:
    """The files of one run directory, and the service that holds its records instead, if one does."""

    path: Path
    service: str | None = None  # the URL of a running `crashlab serve`
    token: str | None = None  # the token its controls need, which it printed as it started

    @property
    def tracker(self) -> Path:
        return self.path / TRACKER_FILE

    @property
    def world(self) -> str:
        """Where the run's records are, as a message names it."""
        return f"the service at {self.service}" if self.service else str(self.tracker)

    def remote(self, points: Recorder, mode: TrackerMode, job: Job) -> RemoteTracker:
        assert self.service is not None
        return RemoteTracker(points, self.service, mode, job, self.token)

    @property
    def checkpoint(self) -> Path:
        return self.path / CHECKPOINT

    def existing(self) -> RunDir:
        """This directory, if it is one a run has made; else a `RunError` that says what is wrong."""
        if not self.path.is_dir():
            raise RunError(f"{self.path}: no such run directory")
        self.check_entries()
        if not self.tracker.is_file():
            raise RunError(f"{self.path}: not a run directory (no {TRACKER_FILE}); make one with crashlab run JOB "
                           f"--dir {self.path}")
        return self

    def check_entries(self) -> None:
        """Refuse a directory where one of crashlab's `ENTRIES` is not a regular file."""
        for name in ENTRIES:
            try:
                mode = os.lstat(self.path / name).st_mode
            except FileNotFoundError:
                continue
            if not stat.S_ISREG(mode):
                raise RunError(f"{self.path / name} is {kind_of(mode)}, not the file crashlab made; remove it")

    def load(self, points: Recorder) -> Checkpoint | None:
        try:
            return FileStore(self.path, points).load()
        except CheckpointError as error:
            raise RunError(str(error)) from None

    def tracker_holds(self) -> tuple[dict[str, str], list[Record]] | None:
        """The tracker's claims and records, read without writing a byte; None if there is no tracker yet."""
        if not self.tracker.exists():
            return None
        with Database(self.tracker, readonly=True) as db:
            db.check()
            if db.empty:  # never opened, or it lost everything (its WAL deleted, the file truncated)
                return {}, []
            return {name: value for name in CLAIMS if (value := db.meta(name)) is not None}, db.records()


def kind_of(mode: int) -> str:
    """What a directory entry is, as a person names it."""
    for test, name in ((stat.S_ISLNK, "a symlink"), (stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO"),
                       (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return name
    return "a device"


@dataclass(frozen=True)
class Finished:
    """How a `run` ended: what the checkpoint holds, what the tracker holds, and whether it had work."""

    checkpoint: Checkpoint
    records: list[Record]
    already: bool  # it was finished before this process started: nothing was done


def check_belongs(checkpoint: Checkpoint, job: Job, where: Path) -> None:
    """Refuse a checkpoint whose saved replies are not this job's: resuming it would mix two runs."""
    for turn in checkpoint.turns:
        if turn.number > len(job.turns) or job.turns[turn.number - 1].calls != turn.calls:
            raise RunError(f"{where} belongs to another job: its turn {turn.number} is not turn {turn.number} of "
                           f"{job.source}")


def check_agrees(files: RunDir, checkpoint: Checkpoint | None, claims: dict[str, str], records: list[Record]) -> None:
    """Refuse a checkpoint and a tracker that tell two stories: resuming either would act on a lie.

    The loop's order makes them agree. The tracker claims its job before the first save; a call's
    marker is saved before its request and its result after the tracker committed the record. So
    every record has a marker or a result in the checkpoint, every saved number is a record its
    call made, and a checkpoint never stands beside a tracker that claims nothing. A tracker that
    lost its WAL, a checkpoint deleted or put back from an older copy, wiped meta: each breaks one.
    """
    if checkpoint is None and records:
        raise RunError(f"{files.world} holds {len(records)} records of a run ({held(records[0])} first) but "
                       f"{files.checkpoint} is missing: running would make them all again under a new run ID; "
                       "use a new run directory")
    if checkpoint is not None and (problem := disagreement(files, checkpoint, records)):
        raise RunError(problem)
    if (records or checkpoint is not None) and (lost := [name for name in CLAIMS if name not in claims]):
        raise RunError(f"{files.tracker} holds a run but no {'/'.join(lost)} in its meta (wiped, or made by an older "
                       "crashlab): it cannot say which job it is; use a new run directory")


def disagreement(files: RunDir, checkpoint: Checkpoint, records: list[Record]) -> str | None:
    """The first thing the checkpoint says that the tracker's records deny, or the other way round."""
    results = checkpoint.results()
    known = set(results)
    for turn in checkpoint.turns:
        known |= set(turn.markers)
        for call in turn.calls:
            if call.id in turn.results and (problem := wrong_result(files, call, turn, results, records)):
                return f"{files.checkpoint} says call {call.id} {problem}"
    for record in records:
        if record.call not in known:
            return (f"{files.world} holds {held(record)}, of which {files.checkpoint} knows nothing "
                    "(no marker, no result)")
        if record.key is not None and record.key not in keys_of(checkpoint, record.call):
            return (f"{files.checkpoint} is not {files.world}'s: its run ID {shown(checkpoint.run)} did not make "
                    f"{held(record)} (its key is another run's), and resuming would send its calls again under new "
                    "keys; put back the run's own checkpoint, or use a new run directory")
    return None


def keys_of(checkpoint: Checkpoint, call: str) -> set[str]:
    """Every key the checkpoint's run can have sent for `call`: one per generation it has reached. A record under
    any other key was made by another run ID, as a checkpoint whose run ID was edited would have it."""
    turn = next((t for t in checkpoint.turns if call in t.markers or call in t.results), None)
    last = turn.generation(call) if turn is not None else 1
    return {key(checkpoint.run, call, generation) for generation in range(1, last + 1)}


def wrong_result(files: RunDir, call: Call, turn: TurnRecord, results: dict[str, Any],
                 records: list[Record]) -> str | None:
    """Why `call`'s saved result cannot be what the loop saved, or None if it can."""
    result = results[call.id]
    if not call.changes:
        return None if isinstance(result, list) else f"returned {shown(result)}, which no search returns"
    if isinstance(result, str):  # a call not made: the person refused it, or the issue it is on was never made
        skipped = turn.approvals.get(call.id) is False or isinstance(results.get(call.ref or ""), str)
        return None if skipped else f"returned {shown(result)}, though the person did not refuse it"
    kind = "issue" if call.tool == "create_issue" else "comment"
    if not isinstance(result, int):
        return f"returned {shown(result)}, which is no {kind} number"
    if any(r.call == call.id and r.kind == kind and r.number == result for r in records):
        return None
    return f"made {kind} #{result}, which {files.world} does not hold"


def held(record: Record) -> str:
    return f"{record.kind} #{record.number} ({record.call})"


def make(directory: Path) -> bool:
    """Make the run directory if it is absent, and say whether it did; its parent must exist.

    Its name is synced into its parent before anything is saved in it (a run killed before that sync
    left it unsynced, so every run syncs it): else a power cut can take the whole directory back,
    checkpoint and all, after the loop's effects were made.
    """
    if not directory.parent.is_dir():
        raise RunError(f"cannot make run directory {directory}: {directory.parent} does not exist")
    try:
        made = not directory.exists()
        directory.mkdir(exist_ok=True)
        sync_directory(directory.parent)
    except (FileExistsError, NotADirectoryError):
        raise RunError(f"{directory} exists and is not a directory") from None
    except OSError as error:
        raise RunError(f"cannot make run directory {directory}: {error.strerror}") from None
    return made


def run(job: Job, directory: Path, tracker_mode: TrackerMode | None = None, person: PersonFactory = SqlitePerson,
        kill_at: int | None = None, pace: float = 0.0, echo: Callable[[str], None] | None = None,
        service: str | None = None, token: str | None = None) -> Finished:
    """One process of the agent's loop over the run directory: start, resume, or say it is done.

    It lives its life as every process of a sweep killed for real does (`crashlab.runners.forked`),
    here in this process, with its checkpoint fully synced. `tracker_mode` None means the
    directory's own (keyed for a new one); any other must match it. With `service` (a running
    `crashlab serve`'s URL, with `token`, the one its controls need), the tracker is that service,
    whose mode the run's must be; the directory keeps the checkpoint, the person's and the model's counts.
    """
    if job.own_tools:
        raise RunError(f"{job.source}: it calls {job.own_tools[0]!r}, a tool of a program's own: the agent's loop runs "
                       "crashlab's tools only (sweep your program with --command instead)")
    made = make(directory)
    files = RunDir(directory, service, token)
    say = echo or (lambda line: None)
    with locked(directory):
        try:
            checkpoint, mode, records = resumable(files, job, tracker_mode)
        except BaseException:
            if made:  # refused before a byte was written: the directory goes as it came
                with contextlib.suppress(OSError):
                    directory.rmdir()
            raise
        write_pid(directory / LOCK_FILE)
        passed = 0
        if checkpoint is not None and checkpoint.finished:
            finished = Finished(checkpoint, records, already=True)
        else:
            say(f"resuming {directory} ({mode} tracker): {checkpoint.summary()}" if checkpoint
                else f"new run of {job.name} in {directory} ({mode} tracker)")
            passed = live(job, files, mode, person, KillingRecorder(kill_at, pace, echo)).passed
            finished = Finished(files.load(Recorder()) or Checkpoint.new(job.run), records_of(files, mode, job),
                                already=False)
    if kill_at is not None and passed < kill_at:
        say(f"--crash-at {kill_at} never fired: this process passed only {passed} crash points")
    return finished


def resumable(files: RunDir, job: Job, tracker_mode: TrackerMode | None) -> tuple[Checkpoint | None, TrackerMode,
                                                                                   list[Record]]:
    """The directory's checkpoint, tracker mode and records, if `job` may run in it; read without writing a byte.

    A run of another job or tracker, a checkpoint and a tracker that disagree, files that are not
    crashlab's: each is refused here, before the loop could act on it.
    """
    checkpoint = files.load(Recorder())
    try:
        found = files.tracker_holds()
        if checkpoint is not None:
            if found is None:
                raise RunError(f"{files.checkpoint} has no tracker beside it: {files.tracker} is missing")
            check_belongs(checkpoint, job, files.checkpoint)
        held, records = found or ({}, [])
        mode = tracker_mode or held.get("tracker") or (served_mode(files.service, files.token) if files.service
                                                                else "keyed")
        if mode not in TRACKER_MODES:
            raise RunError(f"{files.tracker} was made for tracker {shown(mode)}, which this crashlab does not know")
        if files.service is not None:
            if records:
                raise RunError(f"{files.tracker} holds the records of a run on its own tracker: it cannot go on "
                               f"against {files.world}; use a new run directory")
            records = files.remote(Recorder(), mode, job).records
        check_agrees(files, checkpoint, held, records)
        check_claims(files.tracker, held, job, mode)
    except WorldError as error:
        raise RunError(str(error)) from None
    return checkpoint, mode, records


def records_of(files: RunDir, mode: TrackerMode, job: Job) -> list[Record]:
    """What the run's tracker holds now: in the directory, or at the service."""
    if files.service is not None:
        return files.remote(Recorder(), mode, job).records
    with Database(files.tracker, readonly=True) as db:
        return db.records()


def live(job: Job, files: RunDir, mode: TrackerMode, person: PersonFactory, points: KillingRecorder) -> KillingRecorder:
    """The agent's life over the run directory; a disk that fails it (full, read-only, gone) is one line."""
    agent = Agent(mode, random_ids=True)
    setup = Setup(replace(VARIANTS[agent.slug], entry=agent.entry), job)
    remote = None if files.service is None else (lambda points, db, mode: files.remote(points, mode, job))
    points.start_process()
    try:
        if not files.tracker.exists():
            create(files.tracker, claims(job, mode))
        life_in(files.path, setup, points, person, sync="full", tracker=remote)
    except BrokenPipeError:  # the terminal's reader went away: the command line ends quietly
        raise
    except OSError as error:
        raise RunError(f"{files.path}: cannot go on: {error.strerror or error} (the run resumes when run "
                       "again)") from None
    except sqlite3.Error as error:
        raise RunError(f"{files.tracker}: cannot go on: {error} (the run resumes when run again)") from None
    return points


def tracker_rows(directory: Path) -> list[dict[str, Any]]:
    """The tracker's records as rows, each marked `duplicate` when its call made more than one."""
    files = RunDir(directory).existing()
    found = files.tracker_holds()
    if not found or not found[0]:
        raise RunError(f"{files.tracker}: not a crashlab tracker database: it records no job")
    records = found[1]
    copies: dict[str, int] = {}
    for record in records:
        copies[record.call] = copies.get(record.call, 0) + 1
    return [
        {"kind": r.kind, "number": r.number, "call": r.call, "key": r.key, "issue": r.issue, "text": r.text,
         "duplicate": copies[r.call] > 1}
        for r in records
    ]


def read_checkpoint(directory: Path) -> Checkpoint:
    files = RunDir(directory).existing()
    checkpoint = files.load(Recorder())
    if checkpoint is None:
        raise RunError(f"{directory}: no checkpoint yet (the run died before its first save)")
    return checkpoint
