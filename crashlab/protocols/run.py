"""The loop protocol: what one process of any loop gets, and the one call that marks where it can die.

Every loop is an entry point, ``entry(run)``, that does one process's share of the work: it starts
or resumes from what it finds (crashlab's loops in `run.store`, yours in `run.directory`), acts on
the world through `run.world` (or `run.tracker`), and marks its crash points with
`crashlab.point(label)`. crashlab's five designs and its agent, a loop of yours, and every
framework adapter are run this way, by every runner.
"""

from __future__ import annotations

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
