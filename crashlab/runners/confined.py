"""A loop held to its word that it keeps all it keeps in its run directory: it may write nowhere else.

`--state-in-run-dir` is a loop's word that a copy of its run directory is all a restart needs, and a
shared sweep restarts it from such copies. A loop that also keeps a response cache in /tmp restarts
from the copy with the cache as some other process left it, and the sweep counts what no death leaves.
So each process of such a loop is confined by Landlock (Linux 5.13 and later), which the kernel
enforces on the process and on every process it starts: it may write, make, remove, rename and
truncate only beneath its run directory, beside which it may only write to the devices under /dev
(/dev/null, a terminal) and to the files of its own cgroup (its death writes ``cgroup.kill``). A
write anywhere else fails with EACCES; a loop of Python that ends with that `PermissionError` says so
(`WROTE_OUTSIDE`), and the sweep refuses it, naming the path, whichever process of whichever scenario
tried.

What it cannot see: a write by another process the loop talks to (a server, a database daemon, a
service of yours), which is not the loop's process; a loop that catches the refusal and goes on without
its write (it is swept as the loop without that write, which it is not); a program (`--command`) whose
refused write ends it, which is told by its exit status and its stderr, not as a write outside (a
restart's counts as stuck); a write through a file descriptor it inherited open; state kept in a
running process's memory rather than in a file; and, on a kernel without Landlock, anything: the word is
then checked by the copies (`crashlab.engine.copies`) and the merges (`crashlab.engine.merges`) alone.
"""

from __future__ import annotations

import ctypes
import os
from pathlib import Path

from crashlab.errors import BadInput

#: How a confined process says, before its error, that it was refused a write outside its run directory.
WROTE_OUTSIDE = "wrote outside its run directory"

_CREATE_RULESET, _ADD_RULE, _RESTRICT_SELF = 444, 445, 446  # the same on every architecture
_VERSION = 1  # landlock_create_ruleset's flag: the ABI version, not a ruleset
_PATH_BENEATH = 1
_NO_NEW_PRIVS = 38
#: The rights Landlock can refuse that change a file system, by the ABI version that first knows each:
#: write a file, remove a directory or file, make a device, directory, file, socket, FIFO or symlink (1);
#: rename or link across directories (2); truncate (3).
_WRITE, _TRUNCATE = 1 << 1, 1 << 14
_CHANGES = {1: _WRITE | sum(1 << bit for bit in range(4, 13)), 2: 1 << 13, 3: _TRUNCATE}

_libc = ctypes.CDLL(None, use_errno=True)
_confined = False


class _Beneath(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


def version() -> int:
    """The kernel's Landlock ABI version; 0 where it has none (too old, or not enabled)."""
    return max(0, _libc.syscall(_CREATE_RULESET, None, ctypes.c_size_t(0), ctypes.c_uint32(_VERSION)))


def confine(directory: Path, cgroup: Path | None) -> None:
    """From now on, this process and every process it starts may change the file system only beneath `directory`,
    and write only there, to the devices under /dev and to the files of `cgroup`; nothing, without Landlock."""
    global _confined
    abi = version()
    if not abi:
        return
    handled = sum(rights for since, rights in _CHANGES.items() if since <= abi)
    attr = ctypes.c_uint64(handled)
    ruleset = _libc.syscall(_CREATE_RULESET, ctypes.byref(attr), ctypes.c_size_t(8), ctypes.c_uint32(0))
    if ruleset < 0:
        raise OSError(ctypes.get_errno(), f"landlock_create_ruleset: {os.strerror(ctypes.get_errno())}")
    try:
        written = (_WRITE | _TRUNCATE) & handled
        for path, allowed in ((directory, handled), (Path("/dev"), written), (cgroup, written)):
            if path is not None:
                _allow(ruleset, path, allowed)
        if _libc.prctl(_NO_NEW_PRIVS, 1, 0, 0, 0) or _libc.syscall(_RESTRICT_SELF, ruleset, ctypes.c_uint32(0)):
            raise OSError(ctypes.get_errno(), f"landlock_restrict_self: {os.strerror(ctypes.get_errno())}")
    finally:
        os.close(ruleset)
    _confined = True


def _allow(ruleset: int, path: Path, allowed: int) -> None:
    fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
    try:
        beneath = _Beneath(allowed, fd)
        if _libc.syscall(_ADD_RULE, ruleset, _PATH_BENEATH, ctypes.byref(beneath), ctypes.c_uint32(0)):
            raise OSError(ctypes.get_errno(), f"landlock_add_rule {path}: {os.strerror(ctypes.get_errno())}")
    finally:
        os.close(fd)


def told(error: BaseException, said: str) -> str:
    """How a process ended by `error` (`said`, in one line) tells it: as a write outside, where it is confined and
    was refused one."""
    return f"{WROTE_OUTSIDE}: {said}" if _confined and isinstance(error, PermissionError) else said


def check_inside(scenario: str, ended: str) -> None:
    """Refuse the loop (`BadInput`) whose process of `scenario` ended by writing outside its run directory."""
    if ended.startswith(WROTE_OUTSIDE):
        raise BadInput(f"--state-in-run-dir: {scenario} {ended}; sweep it without --state-in-run-dir, which "
                       "re-executes every scenario")
