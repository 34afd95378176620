"""What a loop's process prints, kept apart from crashlab's own output.

A process forked to run a loop inherited crashlab's stdout and stderr, so a loop's ``print()`` went
into the table, the JSON or the CSV a sweep prints (a loop that printed 20 MB a process went
through whole). Each process's fds 1 and 2 are instead pipes the harness reads as it waits for the
process, keeping the last `KEPT` bytes of each: whatever a loop prints costs the harness that much
memory, no more, and no file that could fill the scratch space. `explain` tells the last `LINES`
lines of each, with how much was printed in all.
"""

from __future__ import annotations

import os
import sys
from contextlib import suppress

from crashlab.protocols.points import Event, Recorder, Where

#: The last bytes of each stream kept of one process.
KEPT = 64 * 1024
#: The last lines of each stream a story tells, each cut at `WIDTH` characters.
LINES = 10
WIDTH = 200
#: A process's streams, by the fd the process writes them to.
STREAMS = {1: "stdout", 2: "stderr"}


class Output:
    """A process's stdout and stderr, each a pipe: made before the fork, `redirect`ed in the child, read in the
    parent (`take`, as `fds` are ready; `drain` once the process is gone) and `noted` in its scenario's events."""

    def __init__(self) -> None:
        self.pipes = {fd: os.pipe() for fd in STREAMS}
        self.reading: dict[int, int] = {}  # the parent's read end -> the stream's fd in the child
        self.kept = {fd: bytearray() for fd in STREAMS}
        self.sizes = dict.fromkeys(STREAMS, 0)

    def redirect(self) -> None:
        """In the child: its fds 1 and 2 are the pipes' write ends from now on, and its helpers' (they inherit them)."""
        for fd, (read, write) in self.pipes.items():
            os.dup2(write, fd)
            os.close(read)
            os.close(write)

    def opened(self) -> None:
        """In the parent, once the child is forked: only the child writes to the pipes."""
        for fd, (read, write) in self.pipes.items():
            os.close(write)
            self.reading[read] = fd

    @property
    def fds(self) -> list[int]:
        """The pipes the parent still reads: each until the child, and whatever it started, closed it."""
        return list(self.reading)

    def take(self, read: int) -> None:
        """What the child wrote to one of the pipes since the last take (`read` is ready)."""
        try:
            chunk = os.read(read, 1 << 16)
        except BlockingIOError:
            return
        if not chunk:
            os.close(read)
            del self.reading[read]
            return
        fd = self.reading[read]
        self.sizes[fd] += len(chunk)
        kept = self.kept[fd]
        kept += chunk
        del kept[:-KEPT]

    def drain(self) -> None:
        """Whatever is left in the pipes once the child is dead, without waiting for a writer that outlives it."""
        for read in self.fds:
            os.set_blocking(read, False)
            while read in self.reading:
                before = self.sizes[self.reading[read]]
                self.take(read)
                if read in self.reading and self.sizes[self.reading[read]] == before:
                    os.close(read)  # nothing more for now: what a helper writes later is no part of this life
                    del self.reading[read]

    def close(self) -> None:
        for read in self.fds:
            os.close(read)
        self.reading.clear()

    def noted(self, points: Recorder) -> None:
        """Into the scenario's events, for each stream the process printed on: its size and its last lines."""
        for fd, name in STREAMS.items():
            if self.sizes[fd]:
                last = [shown(line) for line in self.kept[fd].decode(errors="replace").splitlines()[-LINES:]]
                points.events.append(Event(points.process, "printed", name, Where(), 0,
                                           {"bytes": self.sizes[fd], "last": last}))


def shown(line: str) -> str:
    """A line a loop printed, as a story may show it: no control character (an escape sequence would act on the
    reader's terminal), and no longer than `WIDTH`."""
    line = "".join(c if c.isprintable() else ascii(c)[1:-1] for c in line)
    return line if len(line) <= WIDTH else line[:WIDTH - 1] + "…"


def flush() -> None:
    """In the child, before its `os._exit`: what the loop printed and Python still holds goes down its pipe, as a
    process that returns flushes it at its exit."""
    for stream in (sys.stdout, sys.stderr):
        with suppress(Exception):
            stream.flush()
