"""The loop protocol: what one process of any loop gets, and the one call that marks where it can die.

Every loop is an entry point, ``entry(run)``, that does one process's share of the work: it starts
or resumes from what it finds (crashlab's loops in `run.store`, yours in `run.directory`), acts on
the world through `run.world` (or `run.tracker`), and marks its crash points with
`crashlab.point(label)`. crashlab's five designs and its agent, a loop of yours, and every
framework adapter are run this way, by every runner. Or it is a `Program`, a command each of its
processes is, which a runner starts instead of calling, and which crashlab sees only from outside.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from crashlab.durable.store import Store
from crashlab.job import Job
from crashlab.protocols.points import Recorder
from crashlab.world import World
from crashlab.world.client import TrackerClient


@dataclass(frozen=True)
class Run:
    """What one process of a loop gets: the world's handles, where it keeps its progress, which process it is."""

    job: Job
    world: World
    store: Store  # the checkpoint store crashlab's loops keep their progress in
    directory: Path | None  # the run directory, for a loop that keeps files of its own (real processes only)
    process: int  # 1 for a scenario's first process, 2 for its restart, ...
    recorder: Recorder

    @property
    def tracker(self) -> TrackerClient:
        """The tracker, for tools that name the effect each request serves."""
        return TrackerClient(self.world)

    def at(self, turn: int, call: Any = None) -> None:
        """Tell the story where the loop is now: its events are placed there until it moves."""
        self.recorder.at(turn, call)

    def note(self, kind: str, label: str = "", **detail: Any) -> None:
        """Add an event to the story: a decision the loop took, and why."""
        self.recorder.note(kind, label, **detail)


#: One process's share of the work.
Entry = Callable[[Run], object]


@dataclass(frozen=True)
class Program:
    """A loop that is a program of its own (``python agent.py``, ``node agent.mjs``), in any language: each process
    of a scenario is the program, started afresh in its run directory, with its environment pointing at crashlab's
    servers. It imports nothing of crashlab's and marks nothing: its crash points are the events crashlab's own
    servers see, from outside. Where a `Variant`'s entry is one, a runner starts it rather than calling it."""

    argv: tuple[str, ...]

    def __call__(self, run: Run) -> object:
        raise TypeError(f"{self} is a program, started by a runner, not called")

    def __str__(self) -> str:
        return shlex.join(self.argv)
