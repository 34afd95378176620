"""A process of a scenario, forked from the harness, leading a process group of its own.

Its death must take every process it started (a forked helper, a `subprocess.Popen` child), as a
machine's death would, so each such process leads a group, and every kill is of the whole group.
A group is killed only while its leader is not yet reaped: until then its pid cannot be reused, so
a signal to the group can never reach another scenario's process that happens to get the same pid
(pids wrap at 32,768 here, and a sweep forks thousands).
"""

from __future__ import annotations

import math
import os
import select
import signal
import time
from contextlib import suppress
from dataclasses import dataclass, field

from crashlab.errors import HarnessError


class Hung(HarnessError):
    """A process of a scenario ran past its time limit: the harness killed it, with all it started."""


@dataclass
class Child:
    """The harness's handle on one forked process that leads its own group (it called ``os.setpgid(0, 0)``)."""

    pid: int
    limit: float = math.inf  # seconds it may run, from now
    status: int | None = None  # its wait status, once reaped
    deadline: float = field(init=False)

    def __post_init__(self) -> None:
        self.deadline = time.monotonic() + self.limit
        with suppress(PermissionError, ProcessLookupError):  # the child may have done it already, or be gone
            os.setpgid(self.pid, self.pid)  # so the group exists before the harness signals it

    def ready(self, fds: list[int]) -> list[int]:
        """The descriptors of `fds` ready to read, waiting for one as long as the child's time allows; `Hung`
        once it has run past its limit (the caller kills it)."""
        left = self.deadline - time.monotonic()
        ready = select.select(fds, [], [], left)[0] if left > 0 else []
        if not ready:
            raise Hung(f"hung: it ran past its time limit of {self.limit:g} s (--time-limit), and was killed")
        return ready

    def kill(self) -> None:
        """SIGKILL the whole group, the leader too, unless the leader is already reaped."""
        if self.status is None:
            with suppress(ProcessLookupError):
                os.killpg(self.pid, signal.SIGKILL)

    def stopped(self) -> bool:
        """Wait until the leader stops (SIGSTOP) or ends; whether it stopped. An end stays for `reap` to collect."""
        seen = os.waitid(os.P_PID, self.pid, os.WSTOPPED | os.WEXITED | os.WNOWAIT)  # None only with WNOHANG
        if seen is None or seen.si_code != os.CLD_STOPPED:
            return False
        os.waitid(os.P_PID, self.pid, os.WSTOPPED)  # the stop, collected
        return True

    def pause(self) -> None:
        """SIGSTOP the whole group, and wait until its leader has stopped, every thread of it."""
        if self.status is None:
            with suppress(ProcessLookupError):
                os.killpg(self.pid, signal.SIGSTOP)
            self.stopped()

    def resume(self) -> None:
        """SIGCONT the whole group, which its leader stopped."""
        if self.status is None:
            with suppress(ProcessLookupError):
                os.killpg(self.pid, signal.SIGCONT)

    def reap(self) -> int:
        """Wait for the leader to end, kill what it left running, then collect its wait status."""
        if self.status is None:
            os.waitid(os.P_PID, self.pid, os.WEXITED | os.WNOWAIT)  # ended, but its pid still held
            self.kill()
            _, self.status = os.waitpid(self.pid, 0)
        return self.status

    def end(self) -> int:
        """Kill the group and reap the leader: for a harness that stops waiting on it."""
        self.kill()
        return self.reap()
