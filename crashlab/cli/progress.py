"""Progress on long work, on stderr only: a bar on a terminal, a line every few seconds elsewhere.

stdout holds what a script reads (a table, JSON, CSV), so nothing of this ever goes there. Work
that ends within a second shows nothing. How much there is is known only as an estimate before a
sweep grows (`crashlab.engine.sweep.estimated`, meant to err low), so it is said as "about", and
a count that passes it raises it.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, Protocol, TextIO

#: Work shorter than this shows nothing, on a terminal or not.
QUIET_FOR = 1.0
#: Seconds between two lines where stderr is not a terminal (a CI log, a file).
EVERY = 10.0


class Progress(Protocol):
    def expect(self, total: int) -> None:
        """About how much work there is in all, as far as it is known now."""

    def advance(self, n: int) -> None:
        """`n` more done."""


class Lines:
    """A line every `EVERY` seconds, for a stream that is not a terminal: a log keeps each one."""

    def __init__(self, what: str, unit: str, stream: TextIO, clock: Callable[[], float] = time.monotonic):
        self.what, self.unit, self.stream, self.clock = what, unit, stream, clock
        self.start = self.last = clock()
        self.done = 0
        self.total: int | None = None
        self.said = False

    def expect(self, total: int) -> None:
        self.total = total

    def advance(self, n: int) -> None:
        self.done += n
        now = self.clock()
        if now - self.last >= EVERY:
            self.last, self.said = now, True
            self.stream.write(f"crashlab: {self.what}: {said(self.done, self.total, self.unit, now - self.start)}\n")
            self.stream.flush()

    def close(self) -> None:
        if self.said:
            seconds = self.clock() - self.start
            self.stream.write(f"crashlab: {self.what}: {self.done:,} {self.unit} in {seconds:.0f} s\n")
            self.stream.flush()


def said(done: int, total: int | None, unit: str, seconds: float) -> str:
    """``1,234 of about 3,715 scenarios, 6 s in, about 12 s left`` (what is left, once a rate is known)."""
    if total is None or total <= 0:
        return f"{done:,} {unit}, {seconds:.0f} s in"
    total = max(total, done)
    left = f", about {seconds * (total - done) / done:.0f} s left" if done else ""
    return f"{done:,} of about {total:,} {unit}, {seconds:.0f} s in{left}"


class Bar:
    """tqdm's bar, for a terminal: what is done, the rate, and what is left."""

    def __init__(self, what: str, unit: str, stream: TextIO):
        from tqdm import tqdm  # imported only where a bar is drawn

        width, height = size(stream)
        self.bar: Any = tqdm(desc=what, unit=f" {unit}", delay=QUIET_FOR, file=stream, leave=False, mininterval=0.2,
                             ncols=width, nrows=height)

    def expect(self, total: int) -> None:
        self.bar.total = max(total, self.bar.n)  # drawn with the next count, once QUIET_FOR has passed

    def advance(self, n: int) -> None:
        if self.bar.total is not None and self.bar.n + n > self.bar.total:
            self.bar.total = self.bar.n + n  # the estimate erred low: the bar goes on, never past its end
        self.bar.update(n)

    def close(self) -> None:
        self.bar.close()


def size(stream: TextIO) -> tuple[int, int]:
    """The terminal's columns and rows; 80 by 24 where it says 0 by 0, as a pseudo-terminal that nobody sized does
    (`script`, a test's pty, a CI runner's): tqdm draws no bar below a terminal's last row, and row 0 is below 0."""
    try:
        columns, rows = os.get_terminal_size(stream.fileno())
    except (OSError, ValueError):
        columns = rows = 0
    return columns or 80, rows or 24


@contextmanager
def progress(what: str, unit: str, stream: TextIO | None = None) -> Iterator[Progress]:
    """Progress of `what`, counted in `unit`, on `stream` (stderr): a bar on a terminal, else lines."""
    stream = sys.stderr if stream is None else stream
    shown: Bar | Lines = Bar(what, unit, stream) if stream.isatty() else Lines(what, unit, stream)
    try:
        yield shown
    finally:
        shown.close()
