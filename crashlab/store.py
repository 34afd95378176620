"""Checkpoint stores: where a loop makes its progress durable.

Every save is atomic in two steps, and a crash can land between them: the new checkpoint is
written beside the old one (crash point ``temp``: the old one is still the durable one), then
renamed over it (crash point ``renamed``: the new one is). The in-memory store models exactly this;
the file store does it for real with ``os.replace``, and a test holds them to the same table.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Protocol

from .checkpoint import Checkpoint
from .points import Recorder

STORE_KINDS = ("memory", "files")


class Store(Protocol):
    def load(self) -> Checkpoint | None: ...

    def save(self, checkpoint: Checkpoint) -> None: ...


class MemoryStore:
    """A durable store without a disk. Checkpoints are immutable, so keeping the object is a copy."""

    def __init__(self, points: Recorder):
        self.points = points
        self.durable: Checkpoint | None = None

    def load(self) -> Checkpoint | None:
        return self.durable

    def save(self, checkpoint: Checkpoint) -> None:
        self.points.note("save", checkpoint=checkpoint)
        self.points.hit("temp")
        self.durable = checkpoint
        self.points.hit("renamed")


class FileStore:
    """A JSON checkpoint file in `directory`, replaced atomically on every save.

    With `fsync` (the default) the temp file is synced before the rename and the directory after
    it, so the rename survives a power cut too. The sweep turns it off, as the chapter did: a killed
    process loses nothing the kernel already holds.
    """

    def __init__(self, directory: str | Path, points: Recorder, fsync: bool = True):
        self.path = Path(directory) / "checkpoint.json"
        self.temp = self.path.with_name("checkpoint.json.tmp")
        self.points = points
        self.fsync = fsync

    def load(self) -> Checkpoint | None:
        try:
            text = self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return None
        return Checkpoint.from_json(text, str(self.path))

    def save(self, checkpoint: Checkpoint) -> None:
        self.points.note("save", checkpoint=checkpoint)
        with open(self.temp, "w", encoding="utf-8") as file:
            file.write(checkpoint.to_json())
            if self.fsync:
                file.flush()
                os.fsync(file.fileno())
        self.points.hit("temp")
        os.replace(self.temp, self.path)
        if self.fsync:
            directory = os.open(self.path.parent, os.O_RDONLY)
            try:
                os.fsync(directory)
            finally:
                os.close(directory)
        self.points.hit("renamed")
