"""Crash points, and the recorder that sees every one of them.

A crash point is a call to `crashlab.point(label)` (or a harness part's `Recorder.hit`), placed in
the code exactly where the event it names happens; it goes to the recorder of the process running.
The recorder also takes a note of every other event (a model call, a tracker request, a
question to the person), in order, so one list of events tells the sweep what to count, `points`
what to list and `explain` the story. When the running process reaches the point chosen for it, the
recorder raises `Crash`: the process dies there, and everything outside it lives on.

A real death is a SIGKILL: no handler, no ``finally``, no ``__exit__`` runs after it. An exception
cannot be that strict by itself, so the recorder also remembers that the process is dead. Whatever
the dead process still tries (another crash point, a save, a request to the world) is refused: the
recorder notes the violation, with the line of the loop that made it, and raises the crash again.
The sweep then fails the scenario loudly instead of counting what a dead process did.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import Any

from crashlab.errors import HarnessError
from crashlab.protocols import schedule

__all__ = ["Crash", "Event", "HarnessError", "Recorder", "Where", "named", "point", "recording"]


class Crash(BaseException):
    """The process dies here. Only the process: the world and the durable store outlive it.

    It derives from BaseException, as KeyboardInterrupt does, so that a loop's ``except Exception``
    cannot catch its own death and carry on.
    """

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

#: The harness's own modules. A violation is reported at the first frame outside them: the loop's line.
_PACKAGE = Path(__file__).resolve().parent.parent
_HARNESS = {_PACKAGE / name for name in ("protocols/points.py", "durable/store.py", "world/tracker.py",
                                         "world/person.py", "world/model.py", "world/wire.py", "loops/tools.py")}


class Recorder:
    """Counts points per process, records every event, and crashes each process where it was told.

    `crash_at[k]` is the point (1-based) at which process k+1 dies; a process with no entry runs to
    the end. A restart is a new process over the same recorder, started with `start_process`; a
    recorder made with `process=k` numbers its first process k+1 (a restart from a snapshot).
    `scenario` names the scenario in every error, so a failure can be explained.
    """

    def __init__(self, crash_at: Sequence[int] = (), scenario: str = "scenario", process: int = 0):
        self.crash_at = tuple(crash_at)
        self.scenario = scenario
        self.events: list[Event] = []
        self.process = process  # processes already run: a restart from a snapshot starts further on
        #: Called at every crash point, where a death would be: the sweep snapshots there, and a
        #: request in flight may land there.
        self.observers: list[Callable[[], None]] = []
        self.passed = 0
        self.where = START
        self.dead: Crash | None = None  # the crash of the current process, once it has died
        self.violations: list[str] = []
        self._target = 0

    def start_process(self) -> None:
        self.process += 1
        self.passed = 0
        self.where = START
        self.dead = None
        self._target = self.crash_at[self.process - 1] if 1 <= self.process <= len(self.crash_at) else 0

    def at(self, turn: int, call: Any = None) -> None:
        """Tell the recorder where the loop is now; events are placed there until it moves."""
        self.where = Where(turn, call.id, call.tool) if call is not None else Where(turn)

    def hit(self, label: str) -> None:
        if self.dead is not None:
            self.guard(f"crash point {label!r} passed")
        self.passed += 1
        self.events.append(Event(self.process, "point", label, self.where, self.passed))
        for observe in self.observers:
            observe()
        if self.passed == self._target:
            self.events.append(Event(self.process, "crash", label, self.where, self.passed))
            self.dead = Crash(label, self.passed)
            raise self.dead

    def guard(self, what: str) -> None:
        """Refuse `what` (a save, a request, a point) if the current process has already died.

        Called by the store and the world before they change anything, so nothing a dead process
        does (in a ``finally``, an ``__exit__``, a handler that swallowed its crash) becomes durable.
        """
        if self.dead is None:
            return
        self.violations.append(
            f"{self.scenario}: {what} after the crash of process {self.process} at its point "
            f"{self.dead.index} ({self.dead.label}), from {_caller()}"
        )
        raise Crash(self.dead.label, self.dead.index)

    def note(self, kind: str, label: str = "", **detail: Any) -> None:
        self.events.append(Event(self.process, kind, label, self.where, 0, detail))

    def points(self, process: int | None = None) -> list[Event]:
        """The crash points passed, by all processes or by one."""
        return [e for e in self.events if e.kind == "point" and (process is None or e.process == process)]

    def crashes(self) -> list[Event]:
        return [e for e in self.events if e.kind == "crash"]


def named(labels: Sequence[str]) -> list[str]:
    """One process's crash points by label and occurrence (``accepted#2``): a name that stays with its
    event when other points come and go."""
    seen: dict[str, int] = {}
    names = []
    for label in labels:
        seen[label] = seen.get(label, 0) + 1
        names.append(f"{label}#{seen[label]}")
    return names


def _caller() -> str:
    """The loop's innermost two lines on the stack, outside the harness: who broke the rule."""
    frame: FrameType | None = sys._getframe(2)
    lines: list[str] = []
    while frame is not None and len(lines) < 2:
        path = Path(frame.f_code.co_filename)
        if path not in _HARNESS:
            lines.append(f"{_short(path)}:{frame.f_lineno} in {frame.f_code.co_name}")
        frame = frame.f_back
    return " ← ".join(lines) or "an unknown place"


def _short(path: Path) -> str:
    try:
        return str(path.relative_to(Path.cwd()))
    except ValueError:
        return str(path)


#: The recorder of the process running now, which `point` reports to; None outside a sweep.
_recorder: Recorder | None = None


def point(label: str) -> None:
    """A crash point: in a sweep, the process may die here; elsewhere, nothing happens. Where the loop's
    threads are scheduled (`crashlab.protocols.schedule`), it is also where another thread may go on."""
    if _recorder is not None:
        if schedule._scheduler is not None:
            schedule.pause()
        _recorder.hit(label)


@contextmanager
def recording(recorder: Recorder) -> Iterator[Recorder]:
    """Send every `point` to `recorder` while the block runs: one life of one process."""
    global _recorder
    before, _recorder = _recorder, recorder
    try:
        yield recorder
    finally:
        _recorder = before
