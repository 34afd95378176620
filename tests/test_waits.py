"""No wait of the harness's is without bound: a process that does not stop, or end, or die, is said, never waited for.

The harness waits on each process it runs: for it to stop at a point (so the death's state can be copied), to
end, to be gone once killed, and for the frames it tells. Each wait the kernel offers is without bound, and
each can last for ever on a real program: a thread waiting for its vfork'ed child to exec takes no stop, and
one in an operation a file-system server holds takes no SIGKILL. So each wait gives up at the process's time
limit (`Hung`), or `GONE_WITHIN` after its kill (`Outlived`), and the sweep fails that scenario in one line.

Each program here imports nothing of crashlab's. Each wait runs on a thread of its own (`within`): one that
hangs fails its test rather than the suite.
"""

from __future__ import annotations

import os
import select
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import suppress
from pathlib import Path
from typing import TypeVar

import pytest

from crashlab.durable.fuse import WAIT, Layer, unusable
from crashlab.runners.group import GONE_WITHIN, Boundary, Child, Hung, Outlived, children
from crashlab.service import control

from .helpers import started_in

T = TypeVar("T")


def within(seconds: float, wait: Callable[[], T]) -> T:
    """What `wait()` returns, or raises, run on a thread of its own: the test fails if it has not ended in `seconds`
    (the thread is left to end as the test's cleanup kills what it waits on)."""
    outcome: list[tuple[bool, object]] = []

    def run() -> None:
        try:
            outcome.append((True, wait()))
        except BaseException as error:  # raised again on the test's own thread
            outcome.append((False, error))

    thread = threading.Thread(target=run, name="crashlab-test-wait", daemon=True)
    thread.start()
    thread.join(seconds)
    if not outcome:
        pytest.fail(f"still waiting after {seconds:g} s: the wait has no bound")
    done, value = outcome[0]
    if not done:
        assert isinstance(value, BaseException)
        raise value
    return value  # type: ignore[return-value]


def eventually(holds: Callable[[], bool], seconds: float = 10.0) -> None:
    deadline = time.monotonic() + seconds
    while not holds():
        assert time.monotonic() < deadline, "the program never came where the test needs it"
        time.sleep(0.01)


def state(pid: int) -> str:
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]


@pytest.fixture
def started(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[..., Child]]:
    """Start a program in `tmp_path` as the harness starts each process, leading a group of its own, with a time
    limit: the harness's handle on it. Each is killed and reaped at the end, whatever the test did."""
    monkeypatch.chdir(tmp_path)
    handles: list[Child] = []

    def start(limit: float, *argv: str) -> Child:
        known = frozenset(children())
        pid = os.posix_spawn(argv[0], list(argv), os.environ, setpgroup=0)
        handles.append(Child(pid, limit, Boundary(None, known)))
        return handles[-1]

    yield start
    for child in handles:
        if child.status is None:
            with suppress(ProcessLookupError, ChildProcessError):
                os.killpg(child.pid, signal.SIGKILL)
                os.waitpid(child.pid, 0)


#: A program whose one thread waits for the child it vfork'ed (glibc's posix_spawn does) to exec, which it does
#: not: the child first opens a FIFO that no one writes. A process stops only once each of its threads has, and
#: this one's wait takes no stop, only a SIGKILL.
VFORKS = """
import os
os.mkfifo("fifo")
os.posix_spawn("/bin/true", ["true"], {}, file_actions=[(os.POSIX_SPAWN_OPEN, 0, "fifo", os.O_RDONLY, 0)])
"""


def test_a_process_that_cannot_stop_is_hung_at_its_time_limit_and_killed(started) -> None:
    child = started(0.5, sys.executable, "-c", VFORKS)
    eventually(lambda: state(child.pid) == "D")  # in its vfork, waiting for the child
    with pytest.raises(Hung, match=r"^hung: asked to stop, it ran on past its time limit of 0.5 s \(--time-limit\)"):
        within(10, child.pause)
    status = within(10, child.end)  # and a SIGKILL ends it
    assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL


def test_a_process_asked_to_end_by_no_one_is_hung_at_its_time_limit_not_waited_for(started) -> None:
    """`reap` is for a process that ended, or is ending: one that runs on is hung at its limit, and then killed."""
    child = started(0.5, "/bin/sleep", "60")
    with pytest.raises(Hung, match=r"^hung: it ran past its time limit of 0.5 s"):
        within(10, child.reap)
    status = within(10, child.end)
    assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL


def test_a_line_that_stops_half_way_through_a_frame_is_given_up_at_its_bound() -> None:
    """The harness reads a frame once its line is ready; a peer that told half of one and went still must not
    keep it waiting past the process's time."""
    ours, theirs = socket.socketpair()
    with ours, theirs:
        # A header for 16 bytes, then 7 of them, and silence.
        peer = subprocess.Popen(["sh", "-c", r"""printf '\000\000\000\020{"kind"'; exec sleep 60"""], stdout=theirs)
        try:
            with pytest.raises(TimeoutError, match=r"7 of 16 bytes came"):
                within(10, lambda: control.receive(ours, time.monotonic() + 0.3))
        finally:
            peer.kill()
            peer.wait()


# A process no SIGKILL ends at once: a thread of it in an operation the power-cut layer (a FUSE server) holds, told
# and not answered. Its harness holds the answer, so the wait for its death would be for ever.

needs_fuse = pytest.mark.skipif(bool(unusable()), reason=f"FUSE is not usable here: {unusable()}")

#: A program that syncs a file on the layer: it stands in the fsync until the layer answers.
SYNCS = """
import os
fd = os.open("progress", os.O_WRONLY | os.O_CREAT, 0o644)
os.write(fd, b"synced")
os.fsync(fd)
"""
#: The same fsync in a helper in a session of its own, which the program leaves behind as it exits.
HELPER_SYNCS = """
import os
if os.fork() == 0:
    os.setsid()
    fd = os.open("progress", os.O_WRONLY | os.O_CREAT, 0o644)
    os.write(fd, b"synced")
    os.fsync(fd)
"""


@pytest.fixture
def held(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[[str], Child]]:
    """Start a program on a layer that tells its operations, in its cgroup, as the harness starts each process, and
    return once the layer holds its fsync; the layer answers it, gone, at the end, which lets its process die."""
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path))
    backing = tmp_path / "backing"
    backing.mkdir()
    with Layer.over(backing, tells=True) as layer:
        assert layer.line is not None
        known = set(children())
        handles: list[Child] = []

        def start(program: str) -> Child:
            child = started_in(layer.mountpoint, program)
            assert layer.line is not None
            while select.select([layer.line], [], [], WAIT)[0]:  # its operations, up to the fsync, held
                if control.receive(layer.line)["label"].startswith("fsync:"):
                    handles.append(child)
                    return child
                control.send(layer.line, control.GO)
            raise AssertionError("the program never synced")

        try:
            yield start
        finally:
            control.send(layer.line, control.GONE)  # the word the harness owes, which lets each process die
            for pid in set(children()) - known:  # the program, and its helper, reaped
                within(WAIT, lambda pid=pid: os.waitpid(pid, 0))
            for cgroup in (child.boundary.cgroup for child in handles):
                if cgroup is not None:  # left by the survivor, which is gone now
                    assert cgroup.empty(WAIT)
                    cgroup.remove()


@pytest.mark.slow
@needs_fuse
def test_a_process_that_does_not_die_of_its_kill_is_said_to_have_outlived_it(held) -> None:
    child = held(SYNCS)
    with pytest.raises(Outlived, match=rf"^PID {child.pid}, command line '{sys.executable} -c .*', alive "
                                       rf"{GONE_WITHIN:g} s after its SIGKILL$"):
        within(GONE_WITHIN + 10, child.end)


@pytest.mark.slow
@needs_fuse
def test_a_helper_that_does_not_die_of_its_kill_is_said_to_have_outlived_it(held) -> None:
    child = held(HELPER_SYNCS)
    with pytest.raises(Outlived, match=rf"^PID \d+, command line '{sys.executable} -c .*', alive {GONE_WITHIN:g} s "
                                       "after its SIGKILL$"):
        within(GONE_WITHIN + 10, child.reap)  # the program exits; its helper stands in the fsync
    assert child.status == 0
