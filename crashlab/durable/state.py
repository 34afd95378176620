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
from dataclasses import dataclass

import msgspec

from crashlab.durable.store import Files, Store
from crashlab.world import World, WorldState

_encoder = msgspec.msgpack.Encoder()


@dataclass(frozen=True)
class Durable:
    files: Files
    world: WorldState

    @classmethod
    def of(cls, world: World, store: Store) -> Durable:
        return cls(store.files(), world.state())

    def fingerprint(self) -> bytes:
        """A digest that equal states share in any process, so that workers agree on what is distinct."""
        return hashlib.blake2b(_encoder.encode((self.files, self.world)), digest_size=16).digest()
