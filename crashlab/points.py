"""Crash points, and the recorder that sees every one of them.

A crash point is a call to `Recorder.hit`, placed in the code exactly where the event it names
happens. The recorder also takes a note of every other event (a model call, a tracker request, a
question to the person), in order, so one list of events tells the sweep what to count, `points`
what to list and `explain` the story. When the running process reaches the point chosen for it, the
recorder raises `Crash`: the process dies there, and everything outside it lives on.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any


class Crash(Exception):
    """The process dies here. Only the process: the world and the durable store outlive it."""

    def __init__(self, label: str, index: int):
        super().__init__(f"crash at point {index} ({label})")
        self.label = label
        self.index = index


@dataclass(frozen=True, slots=True)
class Where:
    """Where the loop is: the turn (1-based) and the call it is working on, if any."""

    turn: int = 0
    call: str = ""
    tool: str = ""

    def __str__(self) -> str:
        if not self.turn:
            return "start"
        return f"turn {self.turn}" + (f" call {self.call} ({self.tool})" if self.call else "")


@dataclass(slots=True)
class Event:
    """One thing that happened. `kind` is "point" for a crash point, else what happened."""

    process: int
    kind: str
    label: str
    where: Where
    index: int = 0  # a point's 1-based position within its process
    detail: dict[str, Any] = field(default_factory=dict)


START = Where()


class Recorder:
    """Counts points per process, records every event, and crashes each process where it was told.

    `crash_at[k]` is the point (1-based) at which process k+1 dies; a process with no entry runs to
    the end. A restart is a new process over the same recorder, started with `start_process`.
    """

    def __init__(self, crash_at: Sequence[int] = ()):
        self.crash_at = tuple(crash_at)
        self.events: list[Event] = []
        self.process = 0
        self.passed = 0
        self.where = START
        self._target = 0

    def start_process(self) -> None:
        self.process += 1
        self.passed = 0
        self.where = START
        self._target = self.crash_at[self.process - 1] if self.process <= len(self.crash_at) else 0

    def at(self, turn: int, call: Any = None) -> None:
        """Tell the recorder where the loop is now; events are placed there until it moves."""
        self.where = Where(turn, call.id, call.tool) if call is not None else Where(turn)

    def hit(self, label: str) -> None:
        self.passed += 1
        self.events.append(Event(self.process, "point", label, self.where, self.passed))
        if self.passed == self._target:
            self.events.append(Event(self.process, "crash", label, self.where, self.passed))
            raise Crash(label, self.passed)

    def note(self, kind: str, label: str = "", **detail: Any) -> None:
        self.events.append(Event(self.process, kind, label, self.where, 0, detail))

    def points(self, process: int | None = None) -> list[Event]:
        """The crash points passed, by all processes or by one."""
        return [e for e in self.events if e.kind == "point" and (process is None or e.process == process)]

    def crashes(self) -> list[Event]:
        return [e for e in self.events if e.kind == "crash"]
