"""`crashlab run`: the agent's own loop as a real program, which a real kill -9 can stop anywhere.

A run directory holds everything that outlives the process: ``tracker.sqlite`` (the world: tracker,
person's and model's counts, approval desk), ``checkpoint.json`` (the loop's progress, fsynced) and
``lock``. Nothing else carries over from one process to the next, so running the same command again
after a death resumes from exactly what was durable, as a real agent restarts after a real crash.

The process passes the same crash points as the sweep, and can die at one on purpose (`--crash-at`,
a real SIGKILL) or pause at each (`--pace`) so that someone can kill it by hand where they choose.
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from functools import partial
from pathlib import Path
from typing import Any, cast

from crashlab.durable.checkpoint import Checkpoint, CheckpointError
from crashlab.durable.store import CHECKPOINT, FileStore
from crashlab.engine.points import Recorder
from crashlab.engine.scenario import Setup
from crashlab.errors import BadInput
from crashlab.job import Call, Job
from crashlab.loops import VARIANTS
from crashlab.loops.agent import Agent
from crashlab.runners.forked import KillingRecorder, life_in
from crashlab.world import Record, TrackerMode
from crashlab.world.sqlite import TRACKER_FILE, Database, PersonFactory, SqlitePerson, WorldError, open_world

LOCK_FILE = "lock"


class RunError(BadInput):
    """A run that must not start: the message is one line naming the directory and the problem."""


@contextmanager
def locked(directory: Path) -> Iterator[None]:
    """Hold an exclusive OS lock on the run directory, or refuse at once if another process has it.

    `flock` belongs to the open file, so the kernel releases it however the holder dies: a killed
    run never leaves a stale lock behind, and the next run can take it immediately.
    """
    fd = os.open(directory / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        holder = os.read(fd, 32).decode(errors="replace").strip() or "?"
        os.close(fd)
        raise RunError(f"{directory} is in use by another crashlab run (pid {holder}); wait for it to end") from None
    os.ftruncate(fd, 0)
    os.write(fd, f"{os.getpid()}\n".encode())
    try:
        yield
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
    """The files of one run directory."""

    path: Path

    @property
    def tracker(self) -> Path:
        return self.path / TRACKER_FILE

    @property
    def checkpoint(self) -> Path:
        return self.path / CHECKPOINT

    def existing(self) -> RunDir:
        """This directory, if it is one a run has made; else a `RunError` that says what is wrong."""
        if not self.path.is_dir():
            raise RunError(f"{self.path}: no such run directory")
        if not self.tracker.is_file():
            raise RunError(f"{self.path}: not a run directory (no {TRACKER_FILE}); make one with crashlab run JOB "
                           f"--dir {self.path}")
        return self

    def load(self, points: Recorder) -> Checkpoint | None:
        try:
            return FileStore(self.path, points).load()
        except CheckpointError as error:
            raise RunError(str(error)) from None


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


def run(job: Job, directory: Path, tracker_mode: TrackerMode | None = None, person: PersonFactory = SqlitePerson,
        kill_at: int | None = None, pace: float = 0.0, echo: Callable[[str], None] | None = None) -> Finished:
    """One process of the agent's loop over the run directory: start, resume, or say it is done.

    It lives its life as every process of a sweep killed for real does (`crashlab.runners.forked`),
    here in this process, with its checkpoint fully synced. `tracker_mode` None means the
    directory's own (keyed for a new one); any other must match it.
    """
    if not directory.parent.is_dir():
        raise RunError(f"cannot make run directory {directory}: {directory.parent} does not exist")
    try:
        directory.mkdir(exist_ok=True)
    except (FileExistsError, NotADirectoryError):
        raise RunError(f"{directory} exists and is not a directory") from None
    except OSError as error:
        raise RunError(f"cannot make run directory {directory}: {error.strerror}") from None
    files = RunDir(directory)
    say = echo or (lambda line: None)
    with locked(directory):
        checkpoint = files.load(Recorder())
        if checkpoint is not None:
            if not files.tracker.is_file():
                raise RunError(f"{files.checkpoint} has no tracker beside it: {files.tracker} is missing")
            check_belongs(checkpoint, job, files.checkpoint)
        try:
            with Database(files.tracker) as db:
                mode = cast(TrackerMode, tracker_mode or db.meta("tracker") or "keyed")  # open_world checks it
                world = open_world(db, job, Recorder(), mode, person)  # refuses another job's, or tracker's
                if checkpoint is not None and checkpoint.finished:
                    return Finished(checkpoint, world.tracker.records, already=True)
        except WorldError as error:
            raise RunError(str(error)) from None
        say(f"resuming {directory} ({mode} tracker): {checkpoint.summary()}" if checkpoint
            else f"new run of {job.name} in {directory} ({mode} tracker)")
        agent = Agent(mode, random_ids=True)
        setup = Setup(replace(VARIANTS[agent.slug], entry=agent.entry), job)
        points = KillingRecorder(kill_at, pace, echo)
        points.start_process()
        life_in(directory, setup, points, person, sync="full")
        with Database(files.tracker, readonly=True) as db:
            return Finished(files.load(Recorder()) or Checkpoint.new(job.run), db.records(), already=False)


def tracker_rows(directory: Path) -> list[dict[str, Any]]:
    """The tracker's records as rows, each marked `duplicate` when its call made more than one."""
    with Database(RunDir(directory).existing().tracker) as db:
        records = db.records()
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
