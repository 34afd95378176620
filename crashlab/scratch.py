"""Scratch space for a sweep's files, each directory named for the process that made it.

A sweep keeps its stores, worlds, run directories and services' databases in memory where the
machine has it (/dev/shm): the processes it kills lose nothing the kernel holds, and the figures
depend on no fsync. A sweep that ends removes its own; one that is SIGKILLed cannot, so each new
scratch directory first removes those whose maker is dead.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from pathlib import Path

#: Where scratch directories go: memory, where the machine has it; else the system's temporary directory.
SCRATCH = Path("/dev/shm") if Path("/dev/shm").is_dir() else None
#: A scratch directory's name: its kind and its maker's process ID, then mkdtemp's random part.
NAME = re.compile(r"crashlab-[a-z]+-pid(\d+)-")


def place() -> Path:
    """Where scratch directories go: memory, where the machine has it; else the system's temporary directory."""
    return SCRATCH or Path(tempfile.gettempdir())


def scratch(kind: str) -> Path:
    """A new directory for `kind` of file (``store``, ``loop``, ``service``), after removing the ones dead
    processes left."""
    for stale in place().glob("crashlab-*-pid*-*"):
        made = NAME.match(stale.name)
        if made and not alive(int(made[1])) and stale.is_dir() and not stale.is_symlink():
            shutil.rmtree(stale, ignore_errors=True)
    return Path(tempfile.mkdtemp(prefix=f"crashlab-{kind}-pid{os.getpid()}-", dir=place()))


def alive(pid: int) -> bool:
    """Whether a process `pid` runs (as far as this process can tell: another user's counts as alive)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
