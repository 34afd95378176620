"""Scratch space for a sweep's files, each directory held by a lock for as long as it is in use.

A sweep keeps its stores, worlds, run directories and services' databases in memory where the
machine has it (/dev/shm): the processes it kills lose nothing the kernel holds, and the figures
depend on no fsync. A sweep that ends removes its own; one that is SIGKILLed cannot, so each new
scratch directory first removes those no process holds any more.

What is stale is decided by a lock, not a process ID: the process that makes a directory holds a
shared `flock` on it, and so does every process it forks; the kernel lets go of it however they
die. A directory is stale only if an exclusive lock on it can be taken, and it is removed holding
that lock. A PID says nothing across PID namespaces: two containers of one pod, or
``docker --ipc=host``, share /dev/shm, and a sweep in one took a running sweep's files in the other
for a dead process's. The directory's name still carries its maker's PID, for a person to read.
"""

from __future__ import annotations

import fcntl
import os
import re
import shutil
import tempfile
from pathlib import Path

#: Where scratch directories go: memory, where the machine has it; else the system's temporary directory.
SCRATCH = Path("/dev/shm") if Path("/dev/shm").is_dir() else None
#: A scratch directory's name: its kind and its maker's process ID, then mkdtemp's random part.
NAME = re.compile(r"crashlab-[a-z]+-pid(\d+)-")

#: The lock this process holds on each scratch directory it uses, by path: an open descriptor of the directory.
_held: dict[Path, int] = {}


def place() -> Path:
    """Where scratch directories go: memory, where the machine has it; else the system's temporary directory."""
    return SCRATCH or Path(tempfile.gettempdir())


def scratch(kind: str, where: Path | None = None) -> Path:
    """A new directory for `kind` of file (``store``, ``loop``, ``service``), in `where` (else `place()`), held by
    this process until `remove`; after removing the ones no process holds."""
    where = where or place()
    reclaim(where)
    while True:
        made = Path(tempfile.mkdtemp(prefix=f"crashlab-{kind}-pid{os.getpid()}-", dir=where))
        if _hold(made):
            return made  # else another sweep's `reclaim` took it in the instant before the lock: another name


def shared(directory: Path) -> None:
    """Make `directory` (named as `NAME` says) if it is absent, and hold it as `scratch` holds its own: for a
    directory several processes use, each holding it while it lives (a runtime's server's)."""
    while True:
        directory.mkdir(exist_ok=True)
        if _hold(directory):
            return


def reclaim(where: Path) -> None:
    """Remove every scratch directory in `where` that no process holds: its makers are dead, in this PID namespace
    or any other. One in use, or not a plain directory (a symlink, a mount), is left as it is."""
    for stale in where.glob("crashlab-*-pid*-*"):
        if not NAME.match(stale.name) or stale in _held:
            continue
        try:
            fd = os.open(stale, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
        except OSError:
            continue
        try:
            if os.path.ismount(stale):  # a layer's mount point still mounted: never removed through the mount
                continue
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:  # held: in use
            continue
        else:
            shutil.rmtree(stale, ignore_errors=True)
        finally:
            os.close(fd)


def remove(directory: Path) -> None:
    """Remove a scratch directory this process holds, and let go of it."""
    shutil.rmtree(directory, ignore_errors=True)
    release(directory)


def release(directory: Path) -> None:
    """Let go of `directory` (removed, or left to whoever else holds it): the next `reclaim` may remove it."""
    fd = _held.pop(directory, None)
    if fd is not None:
        os.close(fd)


def _hold(directory: Path) -> bool:
    """Hold a shared lock on `directory`; False if it was gone (or being removed) before the lock was taken."""
    try:
        fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except FileNotFoundError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        if os.stat(directory).st_ino == os.fstat(fd).st_ino:  # still the directory at that name
            _held[directory] = fd
            return True
    except OSError:  # being removed: its exclusive lock is a `reclaim`'s
        pass
    os.close(fd)
    return False
