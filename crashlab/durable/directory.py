"""A run directory as the file system holds it: each entry's kind, mode, bytes and time, taken and put back.

A restart reads more than its files' bytes: that a directory is there (an empty one too), a file's mode,
where a symlink points, that a FIFO or a socket has a name. A copy that keeps less (an empty directory
dropped, a symlink copied as the file it names) starts a restart in a state no death leaves. So each
entry is taken as `lstat` sees it, without following a link, and put back the same: a directory made,
a file written, a symlink linked to its very target, a FIFO, socket or device made by `mknod`, each
with its mode and its modification time.

What is not kept: owners (a sweep's processes are one user's), access times, extended attributes, and
hard links (two names of one file are copied as two files). A file's modification time is put back
but is not content (`crashlab.durable.content`): it differs in every run, so two states equal but for
it are one; a loop that acts on one is what the merge check finds (`crashlab.engine.merges`).
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

#: One entry, by its path in the directory ("." for the directory itself): its ``st_mode`` (kind and
#: permissions), its data (a file's bytes, a symlink's target, a device's number in decimal; b"" for the
#: rest) and its modification time in nanoseconds.
Entry = tuple[str, int, bytes, int]
Entries = tuple[Entry, ...]


def taken(directory: Path) -> Entries:
    """Every entry of `directory` and below, in order of path, as the file system holds it now."""
    entries: list[Entry] = []

    def walk(path: str, name: str) -> None:
        status = os.lstat(path)
        entries.append((name, status.st_mode, _data(path, status), status.st_mtime_ns))
        if stat.S_ISDIR(status.st_mode):
            for child in sorted(os.listdir(path)):
                walk(os.path.join(path, child), child if name == "." else f"{name}/{child}")

    walk(str(directory), ".")
    return tuple(entries)


def _data(path: str, status: os.stat_result) -> bytes:
    if stat.S_ISREG(status.st_mode):
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
        with os.fdopen(fd, "rb") as file:
            return file.read()
    if stat.S_ISLNK(status.st_mode):
        return os.fsencode(os.readlink(path))
    if stat.S_ISCHR(status.st_mode) or stat.S_ISBLK(status.st_mode):
        return b"%d" % status.st_rdev
    return b""


def put(directory: Path, entries: Entries) -> None:
    """Make `directory` hold `entries` (over what it holds of the same names): each made in order of path, a
    parent before its children, then, children first, each given its mode and time, so that neither a
    read-only directory nor a child made in a directory changes what it is given."""
    for name, mode, data, _ in entries:
        path = directory / name
        if stat.S_ISDIR(mode):
            path.mkdir(exist_ok=True)
            continue
        if path.is_symlink() or path.exists():
            path.unlink()
        if stat.S_ISREG(mode):
            path.write_bytes(data)
        elif stat.S_ISLNK(mode):
            os.symlink(os.fsdecode(data), path)
        else:
            os.mknod(path, mode, int(data or b"0"))
    for name, mode, _, mtime in reversed(entries):
        path = directory / name
        if not stat.S_ISLNK(mode):
            os.chmod(path, stat.S_IMODE(mode))
        os.utime(path, ns=(mtime, mtime), follow_symlinks=False)


def difference(one: Entries, other: Entries, most: int = 3) -> str:
    """How two directories' entries differ, as people read it (at most `most` paths): "" if in nothing."""
    ours, theirs = {e[0]: e[1:] for e in one}, {e[0]: e[1:] for e in other}
    said = []
    for name in sorted(ours.keys() | theirs.keys()):
        if name not in theirs or name not in ours:
            said.append(f"{name} (in the {'first' if name in ours else 'second'} only)")
        elif ours[name] != theirs[name]:
            said.append(f"{name} ({_how(ours[name], theirs[name])})")
    return ", ".join(said[:most]) + (f" and {len(said) - most} more" if len(said) > most else "")


def _how(ours: tuple[int, bytes, int], theirs: tuple[int, bytes, int]) -> str:
    (mode, data, time), (their_mode, their_data, their_time) = ours, theirs
    if mode != their_mode:
        return f"mode {mode:o} against {their_mode:o}"
    if data != their_data:
        what = "target" if stat.S_ISLNK(mode) else "bytes"
        return f"its {what}: {data[:40]!r} against {their_data[:40]!r}" if len(data) + len(their_data) <= 80 else \
            f"its {what}: {len(data):,} bytes against {len(their_data):,}, not the same"
    return f"modified {time:,} ns after the epoch against {their_time:,}"
