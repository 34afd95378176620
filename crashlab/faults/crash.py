"""The chapter's crash: the loop's process dies at a crash point, and nothing else breaks."""

from __future__ import annotations

from typing import ClassVar

from crashlab.protocols.fault import Capability, Fault


class Crash(Fault):
    """Every other fault adds to this one: the crash is what every sweep does."""

    slug = "crash"
    breaks = "the loop's process dies at a crash point; the OS cache, the tracker and the person outlive it"
    adds = "nothing: the chapter's sweep, the book's table"
    needs: ClassVar[frozenset[Capability]] = frozenset()
    schedules_threads: ClassVar[bool] = True
