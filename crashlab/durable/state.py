"""Durable state as a value: what a death leaves behind, snapshotted, fingerprinted and restored.

A crash takes the process and everything it held; only the store's files and the world (tracker,
person, approval desk, model counts) outlive it. Taken as one value at a crash point, that is the
whole of what a restart can know, and so the whole of what decides its future. This is what lets
the sweep share work: it snapshots the state once as the parent run passes each crash point and
starts every restart from the snapshot, and two points that leave equal states (equal fingerprints)
have one future between them, run once.

A snapshot taken where the crash would be is exactly what a SIGKILL leaves: no handler, no
``finally`` of the dying process runs between the two.
"""

from __future__ import annotations

import hashlib
import zlib
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import msgspec

from crashlab.durable.directory import Entries, difference
from crashlab.durable.store import Store
from crashlab.world import World, WorldState

if TYPE_CHECKING:
    from crashlab.service.store import Dump

_encoder = msgspec.msgpack.Encoder()

#: What a state holds of the loop's files, as a value: a store's (`crashlab.durable.store.Files`), or a run
#: directory's, by its content (`crashlab.durable.content.Content`) or entry by entry (`Entries`).
Kept = tuple[tuple[Any, ...], ...]


@dataclass(frozen=True)
class Durable:
    files: Kept
    world: WorldState

    @classmethod
    def of(cls, world: World, store: Store) -> Durable:
        return cls(store.files(), world.state())

    def fingerprint(self) -> bytes:
        """A digest that equal states share in any process, so that workers agree on what is distinct."""
        return hashlib.blake2b(_encoder.encode((self.files, self.world)), digest_size=16).digest()

    def unlike(self, other: Durable) -> str:
        """How this state differs from `other`, of the same fingerprint, in what a restart starts from: "" where in
        nothing. A value is all it holds: equal fingerprints, one state."""
        return ""


@dataclass(frozen=True)
class OnDisk(Durable):
    """A durable state taken from a run directory: its entries as the file system holds them, as a restart opens
    them (`crashlab.durable.directory`).

    A real process's restart must open the very files a death leaves (a SQLite file's pages, its WAL),
    not a value rebuilt from them; two states whose content is equal still share one future, since
    the fingerprint is the content's (`Durable`'s, with the service's rows), not the bytes'. The bytes
    are kept packed: a run directory is mostly empty SQLite pages, and packs 25 to 40 times smaller
    (zlib at its fastest, about half a millisecond a copy), which keeps a sweep's memory, and what it
    sends to its workers, from growing with every point a job has.
    """

    packed: Entries = ()  # each entry's data packed
    service: Dump | None = None  # a served loop's service, as its file held it then

    @classmethod
    def taken(cls, files: Kept, world: WorldState, raw: Entries, service: Dump | None = None) -> OnDisk:
        """The state of a directory whose entries are `raw`, packed."""
        return cls(files, world, tuple((name, mode, zlib.compress(data, 1), time) for name, mode, data, time in raw),
                   service)

    def raw(self) -> Entries:
        """Each entry, as it was taken."""
        return tuple((name, mode, zlib.decompress(data), time) for name, mode, data, time in self.packed)

    def unlike(self, other: Durable) -> str:
        """Which entries of the two directories differ (in what the content leaves out: bytes a restart reads
        alike, a modification time): the copies two restarts start from."""
        return difference(self.raw(), other.raw()) if isinstance(other, OnDisk) else ""

    def fingerprint(self) -> bytes:
        if self.service is None:
            return super().fingerprint()
        content = (self.files, self.world, self.service.content())
        return hashlib.blake2b(_encoder.encode(content), digest_size=16).digest()
