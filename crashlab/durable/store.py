"""Checkpoint stores: where a loop makes its progress durable.

Every save is atomic in two steps, and a crash can land between them: the new checkpoint is
written beside the old one (crash point ``temp``: the old one is still the durable one), then
renamed over it (crash point ``renamed``: the new one is). The in-memory store models exactly this;
the file store does it for real with ``os.replace``, and a test holds them to the same table.

Both keep the checkpoint's bytes, never the object the loop holds: what a restart reads is what was
saved, whatever the loop did to its own copy afterwards. A save from a process that has already
died is refused before anything is written (see `Recorder.guard`).
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from pathlib import Path
from typing import BinaryIO, Literal, Protocol

from crashlab.durable.checkpoint import Checkpoint, CheckpointError
from crashlab.durable.disk import Disk, Survivor
from crashlab.fsync import sync_directory
from crashlab.job.reader import MAX_CALLS, TEXT_LIMITS
from crashlab.protocols.points import Recorder

#: Where crashlab's own loops keep their checkpoints in a sweep: in memory, or in files.
StoreKind = Literal["memory", "files"]
STORE_KINDS: tuple[StoreKind, ...] = ("memory", "files")

#: What a store holds, as a value: its files' names and bytes, sorted by name. What a death leaves.
Files = tuple[tuple[str, bytes], ...]
CHECKPOINT = "checkpoint.json"

#: The most one call can take in a checkpoint: its longest arguments (a title and a body) at 4 bytes
#: a character (UTF-8; escaped line breaks and quotes take 2), and 1 KiB for its ID in each of the six
#: places it appears (the call, results, markers, decisions, approvals, fenced), its flags, its result
#: and the JSON around them.
CALL_BYTES = 4 * (TEXT_LIMITS["title"] + TEXT_LIMITS["body"]) + 1024
#: The largest checkpoint file crashlab reads, about 19 MiB: every call of the largest job at its
#: largest, plus every search's hits, where half the calls are searches that each hit every issue the
#: other half filed (6 bytes a hit: a number of up to 5 digits and a comma). No loop saves a larger
#: one for a job the reader accepts, so a larger file is not a checkpoint, and is refused unread.
MAX_CHECKPOINT_BYTES = MAX_CALLS * CALL_BYTES + (MAX_CALLS // 2) ** 2 * 6


class Store(Protocol):
    def load(self) -> Checkpoint | None:
        """The durable checkpoint, as a starting process reads it (an event in the story)."""

    def read(self) -> Checkpoint | None:
        """The durable checkpoint, as the harness inspects it afterwards (no event)."""

    def save(self, checkpoint: Checkpoint) -> None: ...

    def files(self) -> Files:
        """Everything the store holds now, for the harness to snapshot."""

    def restore(self, files: Files) -> None:
        """Hold exactly `files`, as a fresh store a restart finds (the harness's, not the loop's)."""

    def survivors(self, model: str) -> list[tuple[Survivor, Files]]:
        """Every state of the store a power cut now allows under the persistence `model`, newest first (see
        `crashlab.durable.disk`)."""


def _files(data: bytes | None) -> Files:
    return () if data is None else ((CHECKPOINT, data),)


def _survivors(disk: Disk, model: str) -> list[tuple[Survivor, Files]]:
    """What a power cut can leave of a store over `disk` under `model`, as the files a restart finds."""
    return [(s, _files(s.data)) for s in disk.survivors(model)]


class MemoryStore:
    """A store without a disk: it keeps the bytes a file would hold, in a model of the page cache.

    `sync` says what each save syncs, as `FileStore`'s does; only a power cut can tell (see `crashlab.durable.disk`).
    """

    def __init__(self, points: Recorder, sync: str = "full"):
        self.points = points
        self.disk = Disk(sync)

    def load(self) -> Checkpoint | None:
        self.points.note("load", data=self.disk.current)
        return self.read()

    def read(self) -> Checkpoint | None:
        data = self.disk.current
        return None if data is None else Checkpoint.from_json(data, "the memory store")

    def save(self, checkpoint: Checkpoint) -> None:
        self.points.guard("a checkpoint written")
        data = checkpoint.to_json()
        self.points.note("save", data=data)
        self.disk.save(data)
        self.points.hit("temp")
        self.disk.rename()
        self.points.hit("renamed")

    def files(self) -> Files:
        return _files(self.disk.current)

    def restore(self, files: Files) -> None:
        self.disk = Disk(self.disk.sync, dict(files).get(CHECKPOINT))

    def survivors(self, model: str) -> list[tuple[Survivor, Files]]:
        return _survivors(self.disk, model)


class FileStore:
    """A JSON checkpoint file in `directory`, replaced atomically on every save.

    `sync` (see `crashlab.durable.disk`) is ``full`` by default: the temp file is synced before the rename
    and the directory after it, so the rename survives a power cut too. The sweep syncs ``none``, as
    the chapter did: a killed process loses nothing the kernel already holds. Beside the real file
    the store keeps the model of its page cache, from which a power cut's survivors are read.
    """

    def __init__(self, directory: str | Path, points: Recorder, sync: str = "full"):
        self.path = Path(directory) / CHECKPOINT
        self.temp = self.path.with_name(CHECKPOINT + ".tmp")
        self.points = points
        self.disk = Disk(sync, self._bytes())

    def load(self) -> Checkpoint | None:
        data = self._bytes()
        self.points.note("load", data=data)
        return None if data is None else Checkpoint.from_json(data, str(self.path))

    def read(self) -> Checkpoint | None:
        data = self._bytes()
        return None if data is None else Checkpoint.from_json(data, str(self.path))

    def _bytes(self) -> bytes | None:
        return read_checkpoint_file(self.path)

    def save(self, checkpoint: Checkpoint) -> None:
        self.points.guard("a checkpoint written")
        data = checkpoint.to_json()
        self.points.note("save", data=data)
        with create_afresh(self.temp) as file:
            file.write(data)
            if self.disk.sync != "none":
                file.flush()
                os.fsync(file.fileno())
        self.disk.save(data)
        self.points.hit("temp")
        os.replace(self.temp, self.path)
        self.disk.rename()
        if self.disk.sync == "full":
            sync_directory(self.path.parent)
        self.points.hit("renamed")

    def files(self) -> Files:
        """The checkpoint file: a temp file beside it is not state, since no load reads it and a save truncates it."""
        data = self._bytes()
        return () if data is None else ((CHECKPOINT, data),)

    def restore(self, files: Files) -> None:
        self.path.unlink(missing_ok=True)
        for name, data in files:
            (self.path.parent / name).write_bytes(data)
        self.disk = Disk(self.disk.sync, self._bytes())

    def survivors(self, model: str) -> list[tuple[Survivor, Files]]:
        return _survivors(self.disk, model)


def read_checkpoint_file(path: Path) -> bytes | None:
    """The checkpoint file's bytes (None: there is none), read only if it is a file a store could have written.

    It is opened without following a symlink and without blocking, and checked before a byte is
    read: a link to another file, a FIFO or a device is refused, and so is a file larger than
    `MAX_CHECKPOINT_BYTES`, so no file can hang the reader or fill its memory.
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        return None
    except OSError as error:
        why = "a symlink, which crashlab never makes" if error.errno == errno.ELOOP else error.strerror
        raise CheckpointError(f"{path}: cannot read: {why}") from None
    with os.fdopen(fd, "rb") as file:
        status = os.fstat(fd)
        if not stat.S_ISREG(status.st_mode):
            raise CheckpointError(f"{path}: not a regular file (a directory, pipe or device): crashlab never makes one")
        if status.st_size > MAX_CHECKPOINT_BYTES:
            raise CheckpointError(f"{path}: {status.st_size} bytes, larger than any checkpoint "
                                  f"({MAX_CHECKPOINT_BYTES} bytes at most)")
        data = file.read(MAX_CHECKPOINT_BYTES + 1)
    if len(data) > MAX_CHECKPOINT_BYTES:  # it grew while being read
        raise CheckpointError(f"{path}: larger than any checkpoint ({MAX_CHECKPOINT_BYTES} bytes at most)")
    return data


def create_afresh(path: Path) -> BinaryIO:
    """A new, empty file at `path`, replacing a stale one without ever writing through it.

    A stale temp file of a dead process is unlinked (which removes a symlink, not its target), and
    the file is created exclusively without following links: whatever another process put at `path`
    meanwhile, no file but the one made here is written.
    """
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
    return os.fdopen(fd, "wb")
