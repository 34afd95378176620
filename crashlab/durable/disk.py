"""The disk under a checkpoint store: what a power cut can leave of the saves a process made.

A killed process loses nothing the kernel holds; a power cut loses the kernel's page cache. A store
keeps one file and replaces it by renaming a temp file over it, syncing as `SYNCS` says: ``none``;
``file``, the temp file's data before the rename; ``full``, the data before and the directory after
it, which leaves exactly what a process crash leaves. `Disk` records that history, and a persistence
model, one of `MODELS`, says which states of the file a cut can leave of it:

- ``ext4-ordered`` (the default): ext4 as mkfs.ext4 and mount make it, ``data=ordered`` with delayed
  allocation and ``auto_da_alloc``;
- ``ext4-writeback``: the same under ``data=writeback``, where no data is ordered before the
  metadata that names it: the same states, since ``data=ordered`` too can commit a checkpoint's
  blocks before their data is marked written (`Ext4Ordered`);
- ``posix``: only what POSIX promises, and so an upper bound on any file system: the model crashlab
  had first, which ALICE's (OSDI '14) application-level analysis takes too.

Each model is a class below whose docstrings say which behaviour of the file system each of its
rules encodes, and where it is written down. `tests/test_disk_ext4.py` holds the ext4 models to a
real ext4 image: every state seen there must be one the model admits.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

SYNCS = ("none", "file", "full")
#: ext4's block size as mkfs.ext4 makes it for any file system larger than 512 MiB: the unit in which
#: a file's data reaches the disk.
BLOCK = 4096


@dataclass(frozen=True)
class Version:
    """One checkpoint the file's name has pointed to: its bytes (None: no file), and how it got there."""

    data: bytes | None
    saved: int  # which save of the process made it; 0 for the file the process started with
    synced: bool  # its data was on the disk before its rename: fsynced, or there when the process started
    over: bool = False  # its rename replaced an existing checkpoint (what triggers ext4's auto_da_alloc)

    @property
    def name(self) -> str:
        return f"the checkpoint of save {self.saved}" if self.saved else "the checkpoint the process started with"


@dataclass(frozen=True)
class Survivor:
    """One state of the file after a power cut: what a restart finds, and how it came to be."""

    what: str
    data: bytes | None


class Disk:
    """The page cache over one checkpoint file and its temp file, in a directory of their own: what
    the store did since the last sync that bounds every model (the directory's), and what it synced."""

    def __init__(self, sync: str, data: bytes | None = None):
        if sync not in SYNCS:
            raise ValueError(f"unknown sync {sync!r} (valid: {', '.join(SYNCS)})")
        self.sync = sync
        self.versions = [Version(data, 0, True)]  # since the last directory sync, oldest first: [0] is on disk
        #: The oldest of `versions` a journal commit forced by a file's fsync may have left: the renames
        #: before that fsync are all in the journal (see `Ext4Ordered.names`).
        self.committed = 0
        self.temp: Version | None = None
        self.saves = 0

    @property
    def current(self) -> bytes | None:
        """What a read sees, and what a process crash leaves: the page cache's view."""
        return self.versions[-1].data

    def save(self, data: bytes) -> None:
        """Write the temp file, then sync as `sync` says; `rename` completes the save."""
        self.saves += 1
        self.temp = Version(data, self.saves, self.sync != "none")
        if self.sync != "none":
            self.committed = len(self.versions) - 1

    def rename(self) -> None:
        assert self.temp is not None, "rename without a temp file"
        self.versions.append(replace(self.temp, over=self.current is not None))
        self.temp = None
        if self.sync == "full":
            self.versions, self.committed = self.versions[-1:], 0

    def survivors(self, model: str) -> list[Survivor]:
        """Every state of the file a power cut now allows under `model` (one of `MODELS`), newest first: the first
        is a process crash's."""
        return MODELS[model].survivors(self)


class Model:
    """A file system's rules for what a power cut leaves of a `Disk`'s history: which checkpoints the
    name can point to, and what can be left of each."""

    def names(self, disk: Disk) -> list[Version]:
        """The checkpoints the name can point to after a cut, oldest first."""
        raise NotImplementedError

    def kept(self, version: Version, newest: bool) -> list[Survivor]:
        """What a cut can leave of one checkpoint the name points to (`newest`: the last renamed), whole first."""
        raise NotImplementedError

    def survivors(self, disk: Disk) -> list[Survivor]:
        versions = self.names(disk)
        return [state for k, version in reversed(list(enumerate(versions)))
                for state in self.kept(version, k == len(versions) - 1)]


class Posix(Model):
    """What POSIX promises, and nothing more: an upper bound on what any file system leaves.

    Only an fsync of the directory makes a rename durable (POSIX fsync: "all data for the open file
    descriptor"; the directory's entries are the directory's data), and only an fsync of the file
    its data. Of what was not synced, a journalling file system keeps directory operations in the
    order they were made, so the name points to one of the checkpoints renamed since the last
    directory sync; and a rename may reach the disk before the data it names, which may then be
    whole, empty, torn anywhere (here: halfway), or at its full size over blocks never written
    (zero-filled: ext4 leaves it under ``data=writeback``, `tests/test_disk_ext4.py` saw it). This
    is the model of ALICE (Pillai et al., OSDI '14), which explores every state such rules allow;
    LazyFS, by contrast, applies a rename at once and loses only unsynced data.
    """

    def names(self, disk: Disk) -> list[Version]:
        return disk.versions

    def kept(self, version: Version, newest: bool) -> list[Survivor]:
        if version.data is None:
            return [Survivor("no checkpoint file", None)]
        whole = Survivor(f"{version.name}, whole", version.data)
        if version.synced:
            return [whole]
        half = version.data[: len(version.data) // 2]
        return [whole, Survivor(f"{version.name}, empty: its data never reached the disk", b""),
                Survivor(f"{version.name}, torn: half its data reached the disk", half),
                Survivor(f"{version.name}, zero-filled at its full size: its blocks reached the disk, not its data",
                         bytes(len(version.data)))]


class Ext4Ordered(Model):
    """ext4 with ``data=ordered``, delayed allocation and ``auto_da_alloc``: mkfs.ext4's and mount's defaults.

    Its rules, from the kernel's Documentation/admin-guide/ext4.rst and the journal's code (jbd2):

    - Metadata reaches the disk in journal transactions, committed in order every ``commit=5``
      seconds, and an fsync of any file commits the running transaction whole, with every directory
      operation made before it (no ``fast_commit``, which mkfs.ext4 does not enable). So under
      ``--sync file`` each save's fsync commits the renames before it, and a cut can take back the
      last rename only; under ``--sync none``, any number of them, as in POSIX (`names`).
    - ``data=ordered``: "all data are forced directly out to the main file system prior to its
      metadata being committed to the journal" -- but with delayed allocation a file's data has no
      blocks, and so nothing to order, until writeback allocates them (some 30 seconds later). A
      new file renamed into place may thus reach the disk at size 0: empty (CrashMonkey's and the
      2009 "zero-length files" reports).
    - ``auto_da_alloc``: when a file is renamed over an existing one, ext4 allocates its blocks
      before the rename, "such that at the next journal commit, in the default data=ordered mode,
      the data blocks of the new file are forced to disk before the rename() operation is
      committed". A checkpoint that replaced another is whole, or not there.
    - Writeback allocates and writes a file block by block, and the size on disk follows the blocks
      it allocated: a file of one block (4 KiB) is whole or empty, never torn; a longer one may be
      cut at a block boundary.

    One window the documentation leaves out: since Linux 5.6 writeback puts delayed blocks in
    unwritten extents (``dioread_nolock``) and marks them written once the write completes, in a later
    transaction, outside the ordering. A cut after the commit that holds the rename and the blocks, and
    before the one that marks them written, leaves the checkpoint at its full size, reading as zeros.
    `tests/test_disk_ext4.py` saw it on a checkpoint that replaced another (once in two runs of the slow
    suite on a busy machine), so the model admits it for every unsynced checkpoint whose blocks were
    allocated: a replacing one at its rename, a new one whenever writeback comes.
    """

    def names(self, disk: Disk) -> list[Version]:
        return disk.versions[disk.committed:]

    def kept(self, version: Version, newest: bool) -> list[Survivor]:
        if version.data is None:
            return [Survivor("no checkpoint file", None)]
        later = "" if newest else "; the renames after it had not reached ext4's journal"
        if version.synced:
            return [Survivor(f"{version.name}, whole{later}", version.data)]
        zeroed = Survivor(f"{version.name}, zero-filled at its full size: ext4 committed its blocks (unwritten "
                          f"extents) before the write into them was marked done{later}", bytes(len(version.data)))
        if version.over:
            return [Survivor(f"{version.name}, whole: it replaced a checkpoint, so ext4 (auto_da_alloc) wrote its "
                             f"data before the rename{later}", version.data), zeroed]
        return [Survivor(f"{version.name}, whole{later}", version.data), *self.lost(version, later), zeroed]

    def lost(self, version: Version, later: str) -> list[Survivor]:
        """The states of a checkpoint renamed to a new name before its data was written (delayed allocation)."""
        assert version.data is not None
        states = [Survivor(f"{version.name}, empty: it took a new name, and ext4 (delayed allocation) had not "
                           f"written its data when the rename reached the journal{later}", b"")]
        if len(version.data) > BLOCK:
            states.append(Survivor(f"{version.name}, torn at a block boundary: writeback had written its first "
                                   f"block, not the rest{later}", version.data[:BLOCK]))
        return states


#: The persistence models, by the name `--disk` gives them; the first is the default.
#: ``data=writeback`` commits blocks before the data written into them, the state ``data=ordered`` leaves
#: in the ``dioread_nolock`` window (`Ext4Ordered`): a cut leaves the same states under either, and both
#: names are kept, for the mount option a user knows.
MODELS: dict[str, Model] = {"ext4-ordered": Ext4Ordered(), "ext4-writeback": Ext4Ordered(), "posix": Posix()}
