"""The disk under a checkpoint store: what a power cut can leave of the saves a process made.

A killed process loses nothing the kernel holds; a power cut loses the kernel's page cache. This
models the cache the way ALICE and LazyFS do, for the one file a store keeps: a write lands in the
cache; an fsync of the file makes its data durable; an fsync of the directory makes its entries
durable, the renames up to it included. Two rules of journalling file systems (ext4, XFS) bound
what else survives: directory operations reach the disk in the order they were made, so the file's
name points to one of the checkpoints renamed since the last directory sync; and a rename may reach
the disk before the data it names, so a checkpoint whose data was not synced may be there whole,
empty (ext4's delayed allocation) or torn (cut halfway).

The syncs a store makes, `SYNCS`: ``none``; ``file``, the data before the rename; ``full``, the
data before and the directory after it, which leaves exactly what a process crash leaves.
"""

from __future__ import annotations

from dataclasses import dataclass

SYNCS = ("none", "file", "full")


@dataclass(frozen=True)
class Version:
    """One checkpoint the file's name has pointed to: its bytes (None: no file), and whether they are on disk."""

    data: bytes | None
    synced: bool
    saved: int  # which save of the process made it; 0 for the file the process started with

    def survivors(self) -> list[Survivor]:
        """What a power cut can leave of it: whole first, then empty and torn."""
        name = f"the checkpoint of save {self.saved}" if self.saved else "the checkpoint the process started with"
        if self.data is None:
            return [Survivor("no checkpoint file", None)]
        if self.synced:
            return [Survivor(f"{name}, whole", self.data)]
        return [Survivor(f"{name}, whole", self.data), Survivor(f"{name}, empty: its data never reached the disk", b""),
                Survivor(f"{name}, torn: half its data reached the disk", self.data[: len(self.data) // 2])]


@dataclass(frozen=True)
class Survivor:
    """One state of the file after a power cut: what a restart finds, and how it came to be."""

    what: str
    data: bytes | None


class Disk:
    """The page cache over one checkpoint file and its temp file, in a directory of their own."""

    def __init__(self, sync: str, data: bytes | None = None):
        if sync not in SYNCS:
            raise ValueError(f"unknown sync {sync!r} (valid: {', '.join(SYNCS)})")
        self.sync = sync
        self.versions = [Version(data, True, 0)]  # since the last directory sync, oldest first: [0] is on disk
        self.temp: Version | None = None
        self.saves = 0

    @property
    def current(self) -> bytes | None:
        """What a read sees, and what a process crash leaves: the page cache's view."""
        return self.versions[-1].data

    def save(self, data: bytes) -> None:
        """Write the temp file, then sync as `sync` says; `rename` completes the save."""
        self.saves += 1
        self.temp = Version(data, self.sync != "none", self.saves)

    def rename(self) -> None:
        assert self.temp is not None, "rename without a temp file"
        self.versions.append(self.temp)
        self.temp = None
        if self.sync == "full":
            self.versions = self.versions[-1:]

    def survivors(self) -> list[Survivor]:
        """Every state of the file a power cut now allows, newest first: the first is a process crash's."""
        return [state for version in reversed(self.versions) for state in version.survivors()]
