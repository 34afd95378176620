"""A process that dies with the process that forked it: a sweep's workers, a scenario's processes.

A process that outlives the harness would run on unwatched, or, stopped where the harness was copying
what its death would leave, stand stopped for good. The engine's workers and the runners' processes
both ask for it, so it sits below both.
"""

from __future__ import annotations

import ctypes
import os
import sys
import threading
import time

#: prctl(2)'s option that has the kernel signal a process when its parent dies (<linux/prctl.h>).
PR_SET_PDEATHSIG = 1
#: The C library, loaded once here, not in each of the thousands of processes a sweep forks.
_libc = ctypes.CDLL(None, use_errno=True) if sys.platform == "linux" else None


def dies_with(parent: int, signum: int) -> None:
    """Have this process sent `signum` when `parent`, which forked it, ends (at once, if it already has).

    A process that outlives the harness would run on unwatched, or, stopped where the harness was
    copying what its death would leave, stand stopped for good: SIGKILL ends even a stopped one."""
    if _libc is not None:
        _libc.prctl(PR_SET_PDEATHSIG, signum)
    else:
        threading.Thread(target=_watch_parent, args=(parent, signum), daemon=True).start()
    if os.getppid() != parent:  # it died before the request above could take effect
        os.kill(os.getpid(), signum)


def _watch_parent(parent: int, signum: int) -> None:
    """Where the kernel cannot signal a parent's death (not Linux): look for it every second."""
    while os.getppid() == parent:
        time.sleep(1)
    os.kill(os.getpid(), signum)
