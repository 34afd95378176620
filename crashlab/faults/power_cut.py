"""`power-cut`: each death is a power cut, and the disk keeps only what the store's syncs made durable.

At each crash point the sweep takes every state of the checkpoint file the disk allows
(`crashlab.durable.disk`), newest first, as scenarios of their own: ``keys-markers+power-cut=none:12~2``
is the second state a cut at point 12 allows (``~1`` is always what a process crash leaves). A
restart that finds an empty or torn file cannot read it: the scenario is stuck (the loop refuses
it, never starting afresh silently).

What the disk allows is two settings: what the store syncs (``--sync``), and the persistence model
of the file system under it (``--disk``, ext4 ``data=ordered`` by default). Both are the fault's, not
the sweep's: they change what a death leaves, so the scenario ID must name them for the ID alone to
replay, and a setting's value is where an ID names a fault's configuration. The model is the second
setting, so an ID on the default disk reads as it always did: ``+power-cut=file`` is
``--sync file --disk ext4-ordered``, ``+power-cut=file.posix`` the same on ``--disk posix``.

A loop whose tools call crashlab's service runs for real (a framework, a loop of yours): there its
run directory sits on the power-cut layer (`crashlab.durable.fuse`), and each death, once the process
and all it started are killed, cuts the power there. The layer says how many states the loop's
operations since their syncs admit where it died (at most `crashlab.durable.fuse.MOST`), each a
scenario of its own, newest first as here: ``~1`` what a process crash leaves, the last only what
the loop's own syncs made durable. The service runs on another machine, which keeps its power:
cutting its database too is the next step.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace
from typing import ClassVar

from crashlab.durable.disk import MODELS, SYNCS
from crashlab.protocols.death import Death, Left
from crashlab.protocols.fault import Capability, Fault, Machine, Serving, Setting
from crashlab.protocols.points import Event

#: What a rename has made durable, as a scenario's story says it at the point ``renamed``: by sync, and
#: under ``--sync none`` by model too (with ``file`` the data is synced, and the models differ in the rename only).
RENAMED = {
    "full": "now durable: its data synced, then the directory",
    "file ext4-ordered": "not yet durable: ext4's journal commits it within seconds, or at the next save's fsync",
    "file ext4-writeback": "not yet durable: ext4's journal commits it within seconds, or at the next save's fsync",
    "file posix": "not durable: its data is synced, but no directory sync makes the rename durable",
    "none ext4-ordered": "not yet durable: ext4's journal commits it within seconds, its data first only if it "
                         "replaced a checkpoint (auto_da_alloc), and marked written maybe later (dioread_nolock)",
    "none ext4-writeback": "not yet durable: ext4's journal commits it within seconds, its data maybe later "
                           "(data=writeback)",
    "none posix": "not durable: neither its data nor the directory is synced",
}


class PowerCut(Fault):
    slug = "power-cut"
    breaks = ("the machine loses power at a crash point: the disk keeps only what the store's syncs (--sync "
              "none|file|full) made durable on the file system --disk models, and a file whose data was not "
              "synced may be empty, torn or zero-filled")
    adds = ("for each crash point, one scenario per disk state the syncs allow (ID SLUG+power-cut=SYNC[.DISK]:I~S, "
            "~1 the crash's); stuck: an unreadable checkpoint")
    settings: ClassVar[tuple[Setting, ...]] = (
        Setting("sync", SYNCS, "none", "With --fault power-cut, what each checkpoint save syncs: none; file, its "
                "data before the rename; full, the directory after it too (what `crashlab run` does)."),
        Setting("disk", tuple(MODELS), "ext4-ordered", "With --fault power-cut, the file system whose rules say "
                "what a power cut leaves of what was not synced: ext4-ordered (ext4's defaults), ext4-writeback "
                "(data=writeback), posix (only what POSIX promises: an upper bound)."),
    )
    needs: ClassVar[frozenset[Capability]] = frozenset({"page-cache"})
    chooses = True
    cuts = True

    def sync(self) -> str:
        return self.chosen("sync")

    def left(self, left: Left, death: Death) -> Iterable[Left]:
        for s, (survivor, files) in enumerate(death.store.survivors(self.chosen("disk")), start=1):
            yield left.then(f"the power cut left {survivor.what}", s, replace(left.durable, files=files))

    def serve(self, serving: Serving) -> Serving:
        """The service as it is: the cut is the loop's machine's (`died`), and leaves one of the states its run
        directory's page cache admits."""
        return replace(serving, cuts=True)

    def died(self, machine: Machine) -> None:
        """Where the loop runs for real, its machine's power goes with it: the page cache under its run directory
        (the forked runner's power-cut layer) keeps the state the scenario names, of those its syncs allow."""
        if machine.page_cache is not None:
            machine.note("power-cut", lost=machine.page_cache.cut(machine.state))

    def note(self, event: Event) -> str | None:
        """At the point ``renamed``, what the rename made durable on this disk, and what not yet; at a cut of
        a run directory on the power-cut layer, what it took back."""
        if event.kind == "power-cut":
            lost = event.detail["lost"]
            return "the POWER is cut: " + ("; ".join(lost) if lost else "every file is as the page cache held it")
        if event.kind != "point" or event.label != "renamed":
            return None
        sync = self.sync()
        return RENAMED["full" if sync == "full" else f"{sync} {self.chosen('disk')}"]
