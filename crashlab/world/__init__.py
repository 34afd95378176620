"""The world: everything outside the loop's process, which every crash leaves standing.

The tracker (the service the tools change), the wire to it, the person (who answers questions and
approves calls), the approval desk, the model (scripted, counting its calls) and the clock. A
restart is a new process over the same world, exactly as a real agent restarts against the same
issue tracker and the same model provider.
"""

from __future__ import annotations

from collections.abc import Callable, MutableSet
from dataclasses import dataclass, field
from typing import Any

from crashlab.job import Job, intended
from crashlab.profiles import DEFAULT, Profile, find
from crashlab.protocols.points import Recorder
from crashlab.world.clock import Clock
from crashlab.world.model import Model
from crashlab.world.person import DESK_MODES, ApprovalDesk, DeskMode, Person
from crashlab.world.tracker import (
    CONTRACT_REFUSAL,
    KEY_RETENTION,
    TRACKER_MODES,
    Fenced,
    NoSuchIssue,
    Record,
    Refused,
    Tracker,
    TrackerMode,
    TrackerProtocol,
)
from crashlab.world.wire import Failed, NoReply, Nth, Relay, TransportError, UnknownOutcome, Wire

__all__ = ["CONTRACT_REFUSAL", "DESK_MODES", "KEY_RETENTION", "TRACKER_MODES", "ApprovalDesk", "Clock", "DeskMode",
           "Failed", "Fenced", "Model", "NoReply", "NoSuchIssue", "Nth", "Parts", "Person", "Record", "Refused",
           "Relay", "Tracker", "TrackerMode", "TrackerProtocol", "TransportError", "UnknownOutcome", "Wire", "World",
           "WorldState"]


@dataclass(frozen=True)
class Parts:
    """How a world's parts are made. A fault swaps one for its own: a tracker that commits in two
    steps, a person who answers wrong, a model that drifts, a longer wire."""

    tracker: Callable[[Recorder, TrackerMode, Clock, Profile], Tracker] = Tracker
    person: Callable[[Recorder, TrackerProtocol, bool], Person] = Person
    model: Callable[[Recorder, Job], Model] = Model
    relays: tuple[Callable[[Wire], Wire], ...] = ()  # lengths of wire in front of the tracker, innermost first


@dataclass(frozen=True)
class WorldState:
    """All that a death leaves of the world, as one value: what a restart starts from.

    Two crash points that leave equal states have equal futures (the loops are deterministic), so
    the sweep runs a restart once per distinct state. Every field is sorted or ordered, so that equal
    worlds give equal values in any process.
    """

    records: tuple[Record, ...]
    keys: tuple[tuple[str, int], ...]
    key_times: tuple[tuple[str, float], ...]
    fenced: tuple[str, ...]  # the keys a fencing tracker's lookups settled as never sent
    asks: int
    approvals: int
    pending: tuple[str, ...]
    decided: tuple[tuple[str, bool], ...]
    model_calls: int
    servers_died: tuple[str, ...]
    earlier: int = 0  # records an earlier run under the same run ID left, which this run does not count
    hours: float = 0.0  # the world's clock
    model: Any = ()  # what the model remembers between calls
    wire: tuple[Any, ...] = ()  # what is on each length of the wire, outermost first
    failed: tuple[str, ...] = ()  # the keys whose request was answered with a failure (`Tracker.failed`)


@dataclass
class World:
    tracker: TrackerProtocol
    person: Person
    desk: ApprovalDesk
    model: Model
    wire: Wire
    #: Calls whose tool server has already died once after the tracker accepted them.
    servers_died: MutableSet[str] = field(default_factory=set)
    clock: Clock = field(default_factory=Clock)

    @property
    def earlier(self) -> int:
        """How many of the tracker's records an earlier run of the job left (see `WorldState.earlier`)."""
        return self.person.earlier

    def made_by(self, call_id: str) -> list[Record]:
        """The records the job's call `call_id` made in this run, under any ID the model gave it, not
        counting an earlier run's: what the verdict counts."""
        return [r for r in self.tracker.records[self.earlier:] if intended(r.call) == call_id]

    @classmethod
    def new(cls, job: Job, points: Recorder, tracker_mode: TrackerMode = "keyed", approves: bool = True,
            desk: DeskMode = "remembers", parts: Parts = Parts(), profile: str = DEFAULT) -> World:
        """A fresh world, its parts made as `parts` says, its tracker keeping `profile`'s contract."""
        clock = Clock()
        tracker = parts.tracker(points, tracker_mode, clock, find(profile))
        person = parts.person(points, tracker, approves)
        wire = Wire(tracker)
        for relay in parts.relays:
            wire = relay(wire)
        return cls(tracker, person, ApprovalDesk(points, person, desk), parts.model(points, job), wire, clock=clock)

    def state(self) -> WorldState:
        """What a death leaves: all of it, but what the tracker had not yet made durable."""
        desk, tracker = self.desk, self.tracker
        lost, lost_keys = tracker.unsaved()
        records = tracker.records[: len(tracker.records) - lost]
        return WorldState(
            records=tuple(records),
            keys=tuple(sorted((k, n) for k, n in tracker.keys().items() if k not in lost_keys)),
            key_times=tuple(sorted((k, t) for k, t in tracker.key_times().items() if k not in lost_keys)),
            fenced=tuple(sorted(tracker.fenced())),
            asks=self.person.asks,
            approvals=self.person.approvals,
            pending=tuple(sorted(desk.pending)),
            decided=tuple(sorted(desk.decided.items())),
            model_calls=self.model.calls,
            servers_died=tuple(sorted(self.servers_died)),
            earlier=self.earlier,
            hours=self.clock.hours,
            model=self.model.state(),
            wire=tuple(layer.state() for layer in self.wire.layers()),
            failed=tuple(sorted(tracker.failures())),
        )

    def restore(self, state: WorldState) -> None:
        """Hold exactly `state`: a fresh world becomes the one a restart finds."""
        tracker = self.tracker
        assert isinstance(tracker, Tracker), "only a world in memory is restored from a value"
        tracker.hold(state.records, dict(state.keys), dict(state.key_times), state.fenced, state.failed)
        self.clock.hours = state.hours
        self.person.asks, self.person.approvals, self.person.earlier = state.asks, state.approvals, state.earlier
        self.desk.pending |= set(state.pending)
        self.desk.decided.update(state.decided)
        self.model.calls = state.model_calls
        self.model.restore(state.model)
        self.servers_died |= set(state.servers_died)
        for layer, held in zip(self.wire.layers(), state.wire, strict=False):
            layer.restore(held)

    def finish(self) -> None:
        """The run's last process has returned: what is still on the wire arrives now."""
        for layer in self.wire.layers():
            layer.finish()
