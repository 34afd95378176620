"""A process of a scenario, forked from the harness, in a cgroup of its own and leading a process group.

Its death must take every process it started (a forked helper, a `subprocess.Popen` child, a helper
in a session of its own), as a machine's death would. A process group does not hold them all: a
helper started with ``start_new_session=True`` or ``setsid`` leaves it, outlived the kill, and made a
duplicate no death could make, or finished a step after the death, which the sweep called flaky. So
each process enters a cgroup v2 of its own before it runs the loop (`Cgroup`), which no helper
leaves by starting a session, and a death is ``cgroup.kill``: every process in it, at once. Where no
cgroup v2 can be made (not root, none mounted writable) the process group is the boundary, and
the harness says so once. Either way the harness adopts every orphan of the scenario's processes
(``PR_SET_CHILD_SUBREAPER``), so one that is still alive once its process is dead and killed (it
left the group, or, as root, wrote itself into another cgroup) is found, killed and reported
(`Outlived`), failing the scenario.

A group is killed only while its leader is not yet reaped: until then its pid cannot be reused, so
a signal to the group can never reach another scenario's process that happens to get the same pid
(pids wrap at 32,768 here, and a sweep forks thousands).

No wait on a process is without bound: a process can fail to stop (a thread of it waits for a vfork'ed
child that has not yet exec'd, a wait no signal but a fatal one ends) or to die (a thread in a
file-system operation its server holds), and the harness must say so rather than wait with it. A
wait for a stop or an end gives up at the process's time limit (`Hung`), and a wait for a killed
process to be gone, `GONE_WITHIN` after its SIGKILL (`Outlived`).
"""

from __future__ import annotations

import itertools
import math
import os
import select
import signal
import sys
import time
from collections.abc import Callable
from contextlib import suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

from crashlab import lifeline
from crashlab.errors import HarnessError
from crashlab.lifeline import OUTLIVES, libc

#: prctl(2)'s option that makes this process the parent of every orphan among its descendants.
PR_SET_CHILD_SUBREAPER = 36
#: How long the processes of a killed cgroup may take to be gone before those left are survivors; and how long a wait
#: on a process with no time limit may last.
GONE_WITHIN = 5.0
#: What is said of a survivor that its SIGKILL did not end.
UNDYING = f", alive {GONE_WITHIN:g} s after its SIGKILL"


class Outlived(HarnessError):
    """A process of a scenario still alive after the death of the process that started it: the message says
    which (PID and command line); the caller names the scenario (`named`)."""

    def named(self, scenario: str, process: int) -> HarnessError:
        return HarnessError(f"a process of scenario {scenario} outlived its death (process {process}'s): {self}")


@dataclass(frozen=True)
class Cgroup:
    """A cgroup v2 of one process of a scenario: every process it starts is in it too, whatever session or
    group it makes, so ``cgroup.kill`` takes them all at once, as a machine's death would."""

    path: Path

    def enter(self) -> None:
        """Move this process into the cgroup: called by the forked process before it runs any of the loop."""
        global _entered
        lifeline.harness_cgroup = self.path.parent
        (self.path / "cgroup.procs").write_text(str(os.getpid()))
        _entered = self

    def kill(self) -> None:
        with suppress(FileNotFoundError):  # removed: its processes are gone
            (self.path / "cgroup.kill").write_text("1")

    def signal(self, signum: int) -> None:
        """Send `signum` to every process in the cgroup but this one."""
        for pid in self.pids():
            if pid != os.getpid():
                with suppress(ProcessLookupError):
                    os.kill(pid, signum)

    def pids(self) -> list[int]:
        try:
            return [int(pid) for pid in (self.path / "cgroup.procs").read_text().split()]
        except FileNotFoundError:
            return []

    def empty(self, within: float) -> bool:
        """Wait up to `within` seconds for the cgroup to hold no live process; whether it does."""
        deadline = time.monotonic() + within
        while "populated 1" in (self.path / "cgroup.events").read_text():
            if time.monotonic() > deadline:
                return False
            time.sleep(0.0002)
        return True

    def remove(self) -> None:
        with suppress(OSError):  # a survivor keeps it; it is reported
            os.rmdir(self.path)


#: In the environment of a process that a loop's process starts to outlive its deaths, as a real deployment's
#: server outlives a worker (a runtime's server, `crashlab.runtimes.sidecar`): not a survivor to report.
#: The cgroup this forked process entered (`Cgroup.enter`), which its death kills whole; None in the harness.
_entered: Cgroup | None = None
#: Where each process of a scenario gets its cgroup: under the harness's own cgroup, once it was found
#: writable (`cgroups`); None where there is none, "" before the first look.
_parent: Path | str | None = ""
_made = itertools.count(1)
#: The process that adopts its descendants' orphans (``PR_SET_CHILD_SUBREAPER``), once it asked to.
_adopter = 0


def cgroups() -> Path | None:
    """The cgroup under which this harness makes one per process, or None (said once on stderr) where it
    cannot, and a process group is the boundary. It also makes this process adopt the orphans of its
    descendants, so that none outlives a death unseen."""
    global _parent, _adopter
    if _adopter != os.getpid() and libc is not None:  # a forked worker does not inherit it
        libc.prctl(PR_SET_CHILD_SUBREAPER, 1)
        _adopter = os.getpid()
    if _parent == "":
        _parent, why = _own_cgroup()
        if _parent is None:
            sys.stderr.write(f"crashlab: warning: no cgroup v2 of its own for each process ({why}): a death kills "
                             "the process group, which a helper in a session of its own leaves; such a survivor "
                             "fails its scenario\n")
    return _parent if isinstance(_parent, Path) else None


def _own_cgroup() -> tuple[Path | None, str]:
    """The cgroup v2 this process is in, if a cgroup with ``cgroup.kill`` can be made under it, else why not."""
    try:
        mount = next(line.split(" - ")[0].split()[4] for line in Path("/proc/self/mountinfo").read_text().splitlines()
                     if line.split(" - ")[1].startswith("cgroup2 "))
        own = next(line[3:] for line in Path("/proc/self/cgroup").read_text().splitlines() if line.startswith("0::"))
    except (OSError, StopIteration, IndexError):
        return None, "no cgroup v2 is mounted"
    parent = Path(mount + own.rstrip("/"))
    for left in parent.glob("crashlab-*-*"):  # a harness killed before it removed the cgroup of its process
        if not Path(f"/proc/{left.name.split('-')[1]}").exists():
            with suppress(OSError):
                left.rmdir()
    probe = parent / f"crashlab-{os.getpid()}-probe"
    try:
        probe.mkdir()
    except OSError as error:
        return None, f"cannot make one in {parent}: {error.strerror}"
    killable = (probe / "cgroup.kill").exists()
    probe.rmdir()
    return (parent, "") if killable else (None, f"{parent} has no cgroup.kill (Linux 5.14 or later has)")


@dataclass(frozen=True)
class Boundary:
    """What a process forked for a scenario cannot leave: a cgroup of its own (or its process group, where
    there is none), and the harness's adoption of its orphans. Made in the harness just before the fork."""

    cgroup: Cgroup | None
    known: frozenset[int]  # the harness's children before the fork: none of them is the scenario's

    @classmethod
    def new(cls) -> Boundary:
        parent = cgroups()
        cgroup = None
        if parent is not None:
            cgroup = Cgroup(parent / f"crashlab-{os.getpid()}-{next(_made)}")
            cgroup.path.mkdir()
        return cls(cgroup, frozenset(children()))

    def enter(self) -> None:
        """In the forked process, first: into its cgroup, leading a group of its own."""
        os.setpgid(0, 0)
        if self.cgroup is not None:
            self.cgroup.enter()


def children() -> list[int]:
    """This process's children, by every thread of it (a child belongs to the thread that forked it)."""
    found = []
    for task in Path("/proc/self/task").iterdir():
        with suppress(FileNotFoundError):  # a thread that ended
            found += [int(pid) for pid in (task / "children").read_text().split()]
    return found


def command_line(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        return "?"


def living_group(pid: int) -> int | None:
    """`pid`'s process group, or None if it can run no more code of its own: gone, a zombie, or exiting (its
    memory released, which leaves its command line empty)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        exiting = not Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return None
    return None if fields[0] == "Z" or exiting else int(fields[2])


def declared(pid: int) -> bool:
    """Whether `pid` was started to outlive the loop's deaths (`OUTLIVES` in the environment it was started with)."""
    try:
        return f"{OUTLIVES}=1".encode() in Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    except OSError:
        return False


def entered() -> Path | None:
    """The cgroup this process entered (`Cgroup.enter`), if it entered one."""
    return None if _entered is None else _entered.path


def die() -> None:
    """SIGKILL this process and every process it started: its cgroup whole, where it entered one, and its
    process group; the death that no code survives, in this process or in a helper it forked or spawned."""
    if _entered is not None:
        _entered.kill()
    os.killpg(0, signal.SIGKILL)
    os.kill(os.getpid(), signal.SIGKILL)


T = TypeVar("T")


def polled(check: Callable[[], T | None], until: float) -> T | None:
    """What `check()` gives once it gives something other than None, asked again after ever longer naps (up to
    10 ms); None if it gave nothing by `until` (`time.monotonic()`). For a wait the kernel offers only without
    a bound (a stop, the end of a process to reap), asked each time with ``WNOHANG``."""
    nap = 0.0001
    while (seen := check()) is None:
        if time.monotonic() > until:
            return None
        time.sleep(nap)
        nap = min(nap * 2, 0.01)
    return seen


def stop() -> None:
    """SIGSTOP this process and every process it started, as a death would take them: the harness copies
    what the death would leave, and lets them go on (`Child.resume`)."""
    if _entered is None:
        os.killpg(0, signal.SIGSTOP)
        return
    _entered.signal(signal.SIGSTOP)
    os.kill(os.getpid(), signal.SIGSTOP)


class Hung(HarnessError):
    """A process of a scenario ran past its time limit: the harness killed it, with all it started."""


@dataclass
class Child:
    """The harness's handle on one forked process that leads its own group (it called ``os.setpgid(0, 0)``),
    within its `boundary`."""

    pid: int
    limit: float = math.inf  # seconds it may run, from now
    boundary: Boundary = field(default_factory=lambda: Boundary(None, frozenset()))
    status: int | None = None  # its wait status, once reaped
    deadline: float = field(init=False)
    killed: float = field(init=False, default=math.inf)  # when it was first killed (`time.monotonic()`)

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
            raise self.hung("it ran")
        return ready

    def hung(self, doing: str) -> Hung:
        """`Hung`, saying what it was `doing` when its time ran out (its limit, or `GONE_WITHIN` where it has none)."""
        bound = f"its time limit of {self.limit:g} s (--time-limit)" if self.limit < math.inf else f"{GONE_WITHIN:g} s"
        return Hung(f"hung: {doing} past {bound}, and was killed")

    def until(self) -> float:
        """When a wait on it gives up (`time.monotonic()`): `GONE_WITHIN` after its kill, once it was killed; else at
        its deadline, or, where it has no time limit, `GONE_WITHIN` from now."""
        if self.killed < math.inf:
            return self.killed + GONE_WITHIN
        return self.deadline if self.deadline < math.inf else time.monotonic() + GONE_WITHIN

    def kill(self) -> None:
        """SIGKILL the whole cgroup and the whole group, the leader too, unless the leader is already reaped."""
        if self.status is None:
            self.killed = min(self.killed, time.monotonic())
            if self.boundary.cgroup is not None:
                self.boundary.cgroup.kill()
            with suppress(ProcessLookupError):
                os.killpg(self.pid, signal.SIGKILL)

    def stopped(self) -> bool:
        """Wait until the leader stops (SIGSTOP) or ends; whether it stopped. An end stays for `reap` to collect.
        `Hung` if it did neither in its time: a thread of it in a wait that no stop interrupts (a parent's, while
        its vfork'ed child has not yet exec'd) keeps the whole process from stopping."""
        seen = polled(lambda: os.waitid(os.P_PID, self.pid, os.WSTOPPED | os.WEXITED | os.WNOWAIT | os.WNOHANG),
                      self.until())
        if seen is None:
            raise self.hung("asked to stop, it ran on")
        if seen.si_code != os.CLD_STOPPED:
            return False
        os.waitid(os.P_PID, self.pid, os.WSTOPPED)  # the stop, collected
        return True

    def pause(self) -> None:
        """SIGSTOP the whole cgroup and group, and wait until its leader has stopped, every thread of it."""
        self._signal(signal.SIGSTOP)
        if self.status is None:
            self.stopped()

    def resume(self) -> None:
        """SIGCONT the whole cgroup and group, which its leader stopped."""
        self._signal(signal.SIGCONT)

    def _signal(self, signum: int) -> None:
        """Send `signum` to every process of the cgroup, or of the group where there is none: once each, for a
        second SIGCONT could reach the leader already stopped at its next point, and let it run past it."""
        if self.status is None:
            if self.boundary.cgroup is not None:
                self.boundary.cgroup.signal(signum)
                return
            with suppress(ProcessLookupError):
                os.killpg(self.pid, signum)

    def reap(self) -> int:
        """Wait for the leader to end, kill what it left running, then collect its wait status; `Outlived` if
        a process it started is alive after that kill (it left the boundary, or no SIGKILL ends it), which is
        killed too. `Hung` if the leader, not killed, did not end in its time; `Outlived` if, killed, it is not
        gone `GONE_WITHIN` after (a thread of it in an operation that no signal interrupts)."""
        if self.status is None:
            if not polled(lambda: os.waitid(os.P_PID, self.pid, os.WEXITED | os.WNOWAIT | os.WNOHANG), self.until()):
                if self.killed == math.inf:
                    raise self.hung("it ran")
                raise Outlived(f"PID {self.pid}, command line {command_line(self.pid)!r}{UNDYING}")
            self.kill()  # it ended, but its pid is still held
            cgroup = self.boundary.cgroup
            stuck = [] if cgroup is None or cgroup.empty(self.until() - time.monotonic()) else cgroup.pids()
            _, self.status = os.waitpid(self.pid, 0)  # at once: it ended
            survivors = {pid: f"command line {command_line(pid)!r}{UNDYING}" for pid in stuck} | self._adopted()
            if cgroup is not None and not stuck:
                cgroup.remove()
            if survivors:
                raise Outlived(", ".join(f"PID {pid}, {said}" for pid, said in survivors.items()))
        return self.status

    def _adopted(self) -> dict[int, str]:
        """The orphans of this process that the harness adopted and that are still alive once it is killed, each
        said by its command line: each killed and reaped here, the dead ones reaped too. A member of the killed
        group is dying, and one whose memory is gone is exiting: neither is a survivor, unless it is not gone
        `GONE_WITHIN` after the kill."""
        survivors: dict[int, str] = {}
        outliving = {pid for pid in children() if declared(pid)}
        undying: set[int] = set()
        for _ in range(100):  # a survivor's own orphans come to the harness once it is killed: look again
            adopted = [pid for pid in children() if pid not in self.boundary.known | outliving | undying
                       and pid != self.pid]
            if not adopted:
                break
            for pid in adopted:
                group = living_group(pid)
                if group is not None and group != self.pid and pid not in survivors:
                    survivors[pid] = f"command line {command_line(pid)!r}"
                    with suppress(ProcessLookupError):
                        os.kill(pid, signal.SIGKILL)
                if not reaped(pid, self.until()):
                    undying.add(pid)
                    survivors[pid] = f"command line {command_line(pid)!r}{UNDYING}"
        return survivors

    def end(self) -> int:
        """Kill the group and reap the leader: for a harness that stops waiting on it."""
        self.kill()
        return self.reap()


def reaped(pid: int, until: float) -> bool:
    """Wait for `pid`, a child of this process, to end, up to `until` (`time.monotonic()`), and reap it; whether it
    ended (one reaped already has)."""
    try:
        return polled(lambda: os.waitpid(pid, os.WNOHANG)[0] or None, until) is not None
    except ChildProcessError:
        return True
