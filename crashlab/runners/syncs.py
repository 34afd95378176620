"""The loop's ``sync(2)`` and ``syncfs(2)``, caught where FUSE does not pass them on, and told to the page cache.

A FUSE file system hears of a file's ``fsync`` and of a directory's, never of ``sync(2)`` or ``syncfs(2)``:
the kernel sends ``FUSE_SYNCFS`` to virtiofs alone, and libfuse 3 has no operation for it (a mount of the
power-cut layer sees nothing at either call; `tests/test_fuse_layer.py` shows it). Yet on Linux both make
everything durable, and a loop that calls ``os.sync()`` after its save is right to count on it.

So the process a runner forks for the loop installs, before any of the loop's code runs, a seccomp filter
that hands those two system calls to the harness (``SECCOMP_RET_USER_NOTIF``: Linux 5.0, and 5.5 to let
the call go on). Every process the loop starts inherits it, an ``exec``'d static binary and a helper in a
session of its own too, and no other system call is slowed. The harness makes the page cache durable
(`crashlab.durable.fuse.Layer.sync`) and only then lets the call go on, so it returns once the layer has
recorded it, as a real one returns once the disk has. A ``syncfs`` of a descriptor on another file system
makes nothing durable here.

What it cannot see: a ``sync`` on an architecture other than x86-64 and arm64 (the filter names the calls by
number), and one in a process the loop's processes did not start (none of theirs, then).
"""

from __future__ import annotations

import ctypes
import fcntl
import os
import platform
import select
import socket
import struct
import threading
from collections.abc import Callable
from contextlib import suppress
from pathlib import Path

from crashlab.lifeline import libc

#: sync(2) and syncfs(2), and the seccomp(2) call itself, by number on each architecture, with the audit ID the
#: filter checks first: a call by another architecture's numbers (a 32-bit one) passes untouched.
CALLS = {"x86_64": (0xC000003E, 162, 306, 317), "aarch64": (0xC00000B7, 81, 267, 277)}
#: <linux/seccomp.h>: the filter mode, its flag for a listener, what a filter returns, and the listener's ioctls.
SET_MODE_FILTER, NEW_LISTENER = 1, 1 << 3
RET_ALLOW, RET_USER_NOTIF = 0x7FFF0000, 0x7FC00000
NOTIF_RECV, NOTIF_SEND, FLAG_CONTINUE = 0xC0502100, 0xC0182101, 1
PR_SET_NO_NEW_PRIVS = 38
#: struct seccomp_notif (id, pid, flags, then seccomp_data: nr, arch, ip, args[6]) and seccomp_notif_resp.
NOTIF, RESPONSE = struct.Struct("=QIIiIQ6Q"), struct.Struct("=QqiI")


class Filter(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


def _program(arch: int, sync: int, syncfs: int) -> bytes:
    """The classic BPF program: sync and syncfs of this architecture go to the listener, all else passes."""
    load, jump, ret = 0x20, 0x15, 0x06  # BPF_LD|BPF_W|BPF_ABS, BPF_JMP|BPF_JEQ|BPF_K, BPF_RET|BPF_K
    rows = [(load, 0, 0, 4), (jump, 0, 3, arch), (load, 0, 0, 0), (jump, 2, 0, sync), (jump, 1, 0, syncfs),
            (ret, 0, 0, RET_ALLOW), (ret, 0, 0, RET_USER_NOTIF)]
    return b"".join(struct.pack("=HBBI", *row) for row in rows)


def catch(to: socket.socket) -> None:
    """In the loop's process, before the loop runs: hand its syncs (and those of every process it starts) to the
    harness, whose end of `to` gets the listener; where seccomp cannot, it gets a word saying so, and no syncs."""
    listener = -1
    calls = CALLS.get(platform.machine())
    if libc is not None and calls is not None:
        arch, sync, syncfs, seccomp = calls
        code = _program(arch, sync, syncfs)
        program = ctypes.create_string_buffer(code, len(code))
        libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)
        listener = libc.syscall(seccomp, SET_MODE_FILTER, NEW_LISTENER,
                                ctypes.byref(Filter(len(code) // 8, ctypes.addressof(program))))
    if listener < 0:
        to.sendall(b"n")
    else:
        socket.send_fds(to, [b"y"], [listener])
        os.close(listener)
    to.close()


class Syncs:
    """The harness's end: the listener of one loop process's filter, served on a thread of its own until `close`.
    Each sync(2), and each syncfs(2) of a file under `directory`, runs `sync` before the call goes on."""

    def __init__(self, listener: int, sync: Callable[[], None], directory: Path):
        self.listener, self.sync, self.directory = listener, sync, str(directory)
        self.closing = threading.Event()
        self.thread = threading.Thread(target=self._serve, name="crashlab-syncs", daemon=True)
        self.thread.start()

    @classmethod
    def heard(cls, on: socket.socket, sync: Callable[[], None], directory: Path) -> Syncs | None:
        """The listener the loop's process sent down `on` (`catch`), served; None where it could not make one."""
        on.settimeout(30)
        try:
            word, fds, _, _ = socket.recv_fds(on, 1, 1)
        except (OSError, TimeoutError):
            return None
        finally:
            on.close()
        return cls(fds[0], sync, directory) if word == b"y" and fds else None

    def _serve(self) -> None:
        poll = select.poll()
        poll.register(self.listener, select.POLLIN)
        while not self.closing.is_set():
            ready = poll.poll(50)
            if not ready:
                continue
            if ready[0][1] & (select.POLLHUP | select.POLLERR | select.POLLNVAL):
                return  # every process under the filter has ended
            asked = bytearray(NOTIF.size)
            try:
                fcntl.ioctl(self.listener, NOTIF_RECV, asked, True)
            except OSError:  # the caller died before it was heard, or every caller is gone
                continue
            ident, pid, _, nr, _, _, fd, *_ = NOTIF.unpack(asked)
            if nr == CALLS[platform.machine()][1] or self._ours(pid, fd):
                with suppress(OSError):  # the layer is being cut: its process is dead by now
                    self.sync()
            with suppress(OSError):  # ENOENT: it died while it waited
                fcntl.ioctl(self.listener, NOTIF_SEND, bytearray(RESPONSE.pack(ident, 0, 0, FLAG_CONTINUE)), True)

    def _ours(self, pid: int, fd: int) -> bool:
        """Whether descriptor `fd` of process `pid` (a syncfs's) is on the run directory's file system."""
        try:
            where = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:  # it died while it waited
            return False
        return where == self.directory or where.startswith(self.directory + "/")

    def close(self) -> None:
        self.closing.set()
        self.thread.join()
        os.close(self.listener)
