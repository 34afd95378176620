"""How long a process lives beside the others: it dies with the process that forked it (a sweep's workers, a
scenario's processes), or it outlives a scenario's deaths on purpose (a runtime's server).

A process that outlives the harness would run on unwatched, or, stopped where the harness was copying
what its death would leave, stand stopped for good. The engine's workers and the runners' processes
both ask for it, and a runtime's server asks for the other, so it sits below all of them.
"""

from __future__ import annotations

import ctypes
import os
import sys
import threading
import time
from pathlib import Path

#: prctl(2)'s option that has the kernel signal a process when its parent dies (<linux/prctl.h>).
PR_SET_PDEATHSIG = 1
#: The C library, loaded once here, not in each of the thousands of processes a sweep forks (None but on Linux).
libc = ctypes.CDLL(None, use_errno=True) if sys.platform == "linux" else None


def dies_with(parent: int, signum: int) -> None:
    """Have this process sent `signum` when `parent`, which forked it, ends (at once, if it already has).

    A process that outlives the harness would run on unwatched, or, stopped where the harness was
    copying what its death would leave, stand stopped for good: SIGKILL ends even a stopped one."""
    if libc is not None:
        libc.prctl(PR_SET_PDEATHSIG, signum)
    else:
        threading.Thread(target=_watch_parent, args=(parent, signum), daemon=True).start()
    if os.getppid() != parent:  # it died before the request above could take effect
        os.kill(os.getpid(), signum)


def _watch_parent(parent: int, signum: int) -> None:
    """Where the kernel cannot signal a parent's death (not Linux): look for it every second."""
    while os.getppid() == parent:
        time.sleep(1)
    os.kill(os.getpid(), signum)


#: In the environment of a process started to outlive the deaths of the scenario's process that started it (a
#: runtime's server): the harness then does not count it a survivor.
OUTLIVES = "CRASHLAB_OUTLIVES"
#: The harness's cgroup, where such a process goes, in a process of a scenario that entered a cgroup of its own
#: (`crashlab.runners.group.Cgroup.enter`); None elsewhere.
harness_cgroup: Path | None = None


def outlives(pid: int) -> None:
    """Move `pid`, just started by this process to outlive its deaths (with `OUTLIVES` in its environment), out of
    the cgroup this process's death kills, into the harness's: before the interpreter it execs starts anything."""
    if harness_cgroup is not None:
        (harness_cgroup / "cgroup.procs").write_text(str(pid))
