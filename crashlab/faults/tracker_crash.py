"""`tracker-crash`: the tracker dies with the loop, and restarts from what it made durable.

How it makes a request durable brings its own crash points, which number among the loop's: a
tracker that answers before it commits (``ack-first``) loses the effect, one that commits the key
after the record (``two-step``) loses the key, and one that commits both before it answers
(``one-txn``, as crashlab's SQLite tracker does) loses nothing anyone heard of.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace
from functools import partial
from typing import Any, ClassVar

from crashlab.job import Call
from crashlab.profiles import Profile
from crashlab.protocols.death import Death, Left
from crashlab.protocols.fault import Fault, Serving, Setting
from crashlab.protocols.points import Recorder
from crashlab.service.store import COMMITS  # the commit orders, as crashlab's service names them
from crashlab.world import Clock, Parts, Tracker, TrackerMode, World, WorldState
from crashlab.world.tracker import Applied


class CommittingTracker(Tracker):
    """A tracker whose requests become durable in steps, with a crash point between them.

    ``applied``: the request is in its memory only. ``record-committed`` (two-step): the record is
    durable, its key not yet. An ack-first tracker commits a request's write behind its answer, at
    the next request (a write-behind cache).
    """

    def __init__(self, points: Recorder, mode: TrackerMode, clock: Clock, profile: Profile | None = None,
                 commit: str = "ack-first"):
        super().__init__(points, mode, clock, profile)
        self.commit = commit
        self._unsaved_records = 0
        self._unsaved_keys: set[str] = set()

    def before_applying(self) -> None:
        if self.commit == "ack-first":
            self.flush()  # the last request's write, behind its answer

    def apply(self, call: Call, args: dict[str, Any], key: str | None) -> Applied | None:
        """As a tracker in memory applies it, what it leaves unsaved counted: a refusal, which makes no record, is
        kept under its key at once."""
        done = super().apply(call, args, key)
        if done is not None:
            self._unsaved_records += done.made
            if done.kept_key and key is not None:
                self._unsaved_keys.add(key)
        return done

    def make_durable(self) -> None:
        self.points.hit("applied")
        if self.commit == "two-step":
            self._unsaved_records = 0
            self.points.hit("record-committed")
        if self.commit != "ack-first":
            self.flush()

    def flush(self) -> None:
        self._unsaved_records, self._unsaved_keys = 0, set()

    def unsaved(self) -> tuple[int, frozenset[str]]:
        return self._unsaved_records, frozenset(self._unsaved_keys)


class TrackerCrash(Fault):
    slug = "tracker-crash"
    breaks = ("the tracker dies with the loop, and restarts from what it made durable: it answers before it commits "
              "(--commit ack-first), commits the record then the key (two-step), or both in one transaction, then "
              "answers (one-txn)")
    adds = ("the tracker's own crash points, applied (in its memory only) and record-committed (two-step), among the "
            "loop's; IDs SLUG+tracker-crash=COMMIT:I:J over them")
    settings: ClassVar[tuple[Setting, ...]] = (
        Setting("commit", COMMITS, "ack-first", "With --fault tracker-crash, how the tracker makes a request "
                "durable: ack-first answers, then commits; two-step commits the record, then its key; one-txn "
                "commits both in one transaction, then answers."),
    )
    replaces: ClassVar[frozenset[str]] = frozenset({"tracker"})

    def parts(self, parts: Parts) -> Parts:
        return replace(parts, tracker=partial(CommittingTracker, commit=self.value))

    def left(self, left: Left, death: Death) -> Iterable[Left]:
        yield left.then(lost(death.world, left.durable.world))

    def serve(self, serving: Serving) -> Serving:
        """The service commits as the setting says, passes its crash points between the steps, and dies
        with the loop at every death: a real SIGKILL, then a restart over its database."""
        return replace(serving, commit=self.value, steps=True, dies=True)


def lost(world: World, left: WorldState) -> str:
    """What the tracker of `world` loses when it dies and restarts from `left`, as people read it."""
    tracker, kept = world.tracker, len(left.records)
    gone = tracker.keys().keys() - dict(left.keys).keys()
    lost = [f"{r.kind} #{r.number} ({r.call})" for r in tracker.records[kept:]]
    lost += [f"the key of {r.call}" for r in tracker.records[:kept] if r.key in gone]
    if not lost:
        return "the tracker had made every request durable"
    return f"the tracker lost {', '.join(lost)}: not yet durable"
