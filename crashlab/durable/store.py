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

import os
from pathlib import Path
from typing import Protocol

from crashlab.durable.checkpoint import Checkpoint
from crashlab.durable.disk import Disk, Survivor
from crashlab.engine.points import Recorder

STORE_KINDS = ("memory", "files")

#: What a store holds, as a value: its files' names and bytes, sorted by name. What a death leaves.
Files = tuple[tuple[str, bytes], ...]
CHECKPOINT = "checkpoint.json"


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

    def survivors(self) -> list[tuple[Survivor, Files]]:
        """Every state of the store a power cut now allows, newest first (see `crashlab.durable.disk`)."""


def _files(data: bytes | None) -> Files:
    return () if data is None else ((CHECKPOINT, data),)


def _survivors(disk: Disk) -> list[tuple[Survivor, Files]]:
    """What a power cut can leave of a store over `disk`, as the files a restart finds."""
    return [(s, _files(s.data)) for s in disk.survivors()]


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

    def survivors(self) -> list[tuple[Survivor, Files]]:
        return _survivors(self.disk)


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
        try:
            return self.path.read_bytes()
        except FileNotFoundError:
            return None

    def save(self, checkpoint: Checkpoint) -> None:
        self.points.guard("a checkpoint written")
        data = checkpoint.to_json()
        self.points.note("save", data=data)
        with open(self.temp, "wb") as file:
            file.write(data)
            if self.disk.sync != "none":
                file.flush()
                os.fsync(file.fileno())
        self.disk.save(data)
        self.points.hit("temp")
        os.replace(self.temp, self.path)
        self.disk.rename()
        if self.disk.sync == "full":
            directory = os.open(self.path.parent, os.O_RDONLY)
            try:
                os.fsync(directory)
            finally:
                os.close(directory)
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

    def survivors(self) -> list[tuple[Survivor, Files]]:
        return _survivors(self.disk)
