"""`power-cut`: each death is a power cut, and the disk keeps only what the store's syncs made durable.

At each crash point the sweep takes every state of the checkpoint file the disk allows
(`crashlab.durable.disk`), newest first, as scenarios of their own: ``keys-markers+power-cut=none:12~2``
is the second state a cut at point 12 allows (``~1`` is always what a process crash leaves). A
restart that finds an empty or torn file cannot read it: the scenario is stuck (the loop refuses
it, never starting afresh silently).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace
from typing import ClassVar

from crashlab.durable.disk import SYNCS
from crashlab.engine.death import Death, Left
from crashlab.faults import Capability, Fault, Setting


class PowerCut(Fault):
    slug = "power-cut"
    breaks = ("the machine loses power at a crash point: the disk keeps only what the store's syncs (--sync "
              "none|file|full) made durable, and a file whose data was not synced may be empty or torn")
    adds = ("for each crash point, one scenario per disk state the syncs allow (ID SLUG+power-cut=SYNC:I~S, ~1 the "
            "crash's); stuck: an unreadable checkpoint")
    settings: ClassVar[tuple[Setting, ...]] = (
        Setting("sync", SYNCS, "none", "With --fault power-cut, what each checkpoint save syncs: none; file, its "
                "data before the rename; full, the directory after it too (what `crashlab run` does)."),
    )
    needs: ClassVar[frozenset[Capability]] = frozenset({"page-cache"})
    chooses = True

    def sync(self) -> str:
        return self.value

    def left(self, left: Left, death: Death) -> Iterable[Left]:
        for s, (survivor, files) in enumerate(death.store.survivors(), start=1):
            yield left.then(f"the power cut left {survivor.what}", s, replace(left.durable, files=files))
