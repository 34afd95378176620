"""The world: everything outside the loop's process, which every crash leaves standing.

The tracker (the service the tools change), the person (who answers questions and approves calls),
the approval desk (through which approvals go), and the model (scripted, counting its calls). A
restart is a new process over the same world, exactly as a real agent restarts against the same
issue tracker and the same model provider.
"""

from __future__ import annotations

from collections.abc import MutableMapping, MutableSet
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

from crashlab.engine.points import Recorder
from crashlab.job import Call, Job, Turn

#: What a tracker does with an idempotency key or client token sent with a changing request.
TRACKER_MODES = ("keyed", "keyless", "lookup", "fencing")
#: How a tracker makes a request durable, under the fault `tracker-crash` (a durable tracker, the
#: chapter's, loses nothing): it answers, then commits at its next request (a write-behind cache);
#: it commits the record, then its key; it commits both in one transaction, then answers.
COMMITS = ("ack-first", "two-step", "one-txn")
#: How long a keyed tracker holds a key for answering its repeats, in hours (Stripe's 24).
KEY_RETENTION = 24.0


@dataclass
class Clock:
    """The world's time, in hours since the scenario began: a process takes none, a restart's downtime
    (the fault `expired-key`) all there is. Every part of the world that keeps time reads this one."""

    hours: float = 0.0


class Fenced(Exception):
    """A request under a key that a lookup fenced: the receiver refuses it (the Idempotency-Key draft's 409)."""


@dataclass(frozen=True)
class Delivery:
    """A changing request on the wire: sent, not yet applied. A death leaves it in flight (late-delivery)."""

    call: Call
    args: dict[str, Any]
    key: str | None


@dataclass(frozen=True)
class Record:
    """One thing the tracker holds: an issue or a comment, tagged with the script call that made it."""

    kind: str  # "issue" or "comment"
    number: int
    call: str
    key: str | None = None
    issue: int | None = None  # the issue a comment is on
    text: str = ""


class TrackerProtocol(Protocol):
    """What a loop, the person and the verdict ask of a tracker; a loop cannot tell which one it has.

    Two implement it: `Tracker` here, in memory (the sweep's fast default), and
    `crashlab.world.sqlite.SqliteTracker`, in a database file that outlives a real process.
    """

    points: Recorder
    mode: str
    commit: str  # how it makes a request durable, as the fault `tracker-crash` varies it: see COMMITS

    @property
    def records(self) -> list[Record]: ...

    @property
    def honours_keys(self) -> bool: ...

    @property
    def answers_lookups(self) -> bool: ...

    @property
    def fences(self) -> bool: ...

    def request(self, call: Call, args: dict[str, Any], key: str | None = None) -> int: ...

    def search(self, call: Call, query: str) -> list[int]: ...

    def lookup(self, key: str) -> int | None: ...

    def made_by(self, call_id: str) -> list[Record]: ...

    def keys(self) -> dict[str, int]:
        """Every key the tracker remembers, with its first answer (none for a keyless tracker)."""

    def key_times(self) -> dict[str, float]:
        """When each key was last applied, in the world's hours: what its retention counts from."""

    def unsaved(self) -> tuple[int, frozenset[str]]:
        """What a death would take from the tracker: its newest records and the keys not yet durable."""

    def fenced(self) -> frozenset[str]:
        """The keys a lookup settled as never sent: a request that carries one is refused."""


class Tracker:
    """The issue tracker. Its records outlive every crash.

    `mode` says what it does with a key: ``keyed`` honours it (a known key returns the first answer
    and changes nothing), ``keyless`` ignores it and cannot be asked about it, ``lookup`` ignores it
    for the request but can answer whether a request with that key happened and what it returned.
    ``fencing`` answers lookups too, and a lookup that finds nothing fences the key: the receiver
    has settled it as never sent, and refuses a request that arrives with it later (`Fenced`), so a
    late arrival cannot add to the resend the loop makes under a new key.

    A keyed tracker honours a key for `KEY_RETENTION` hours after it applied it, then forgets it,
    and a repeat is applied again. A lookup is not bound by it: a record keeps the key it was made
    with, as Stripe's objects keep their metadata, so the receiver can still be asked about it.

    `commit` (one of COMMITS, under the fault `tracker-crash`) says how it makes a request durable,
    with crash points of its own: ``applied`` (in its memory only) and, committing in two steps,
    ``record-committed`` (the record durable, its key not). Without one, it loses nothing.
    """

    def __init__(self, points: Recorder, mode: str = "keyed", clock: Clock | None = None, commit: str = ""):
        if mode not in TRACKER_MODES:
            raise ValueError(f"unknown tracker mode {mode!r} (valid: {', '.join(TRACKER_MODES)})")
        self.points = points
        self.mode = mode
        self.clock = clock or Clock()
        self.records: list[Record] = []
        self._issues = 0
        self._comments = 0
        self._by_key: dict[str, int] = {}
        self._key_times: dict[str, float] = {}
        self.commit = commit
        self._unsaved_records = 0  # the newest records, not yet durable
        self._unsaved_keys: set[str] = set()
        self._fenced: set[str] = set()

    @property
    def honours_keys(self) -> bool:
        return self.mode == "keyed"

    @property
    def answers_lookups(self) -> bool:
        return self.mode in ("keyed", "lookup", "fencing")

    @property
    def fences(self) -> bool:
        return self.mode == "fencing"

    def request(self, call: Call, args: dict[str, Any], key: str | None = None) -> int:
        """Apply a changing request (create or comment) and return the new record's number."""
        self.points.guard("a tracker request made")
        if key in self._fenced:
            raise Fenced(f"call {call.id}'s key {key} was fenced by a lookup: the tracker refuses it")
        if self.commit == "ack-first":
            self._commit()  # the last request's write, behind its answer
        number, applied, forgot = self._apply(call, args, key)
        self.points.note("request", call.tool, call=call.id, key=key, applied=applied, answer=number, forgot=forgot)
        if not applied:
            self.points.hit("accepted")
            return number
        if self.commit:
            self.points.hit("applied")  # in the tracker's memory only
        if self.commit == "two-step":
            self._unsaved_records = 0
            self.points.hit("record-committed")  # the record is durable, its key not yet
        if self.commit != "ack-first":
            self._commit()
        self.points.hit("accepted")
        return number

    def _apply(self, call: Call, args: dict[str, Any], key: str | None) -> tuple[int, bool, bool]:
        """The request's answer, whether it was applied (not answered from a kept key), and whether
        the key it repeats had been forgotten."""
        known = key is not None and self.honours_keys and key in self._by_key
        forgot = known and self.clock.hours - self._key_times[key] >= KEY_RETENTION
        if known and not forgot:
            return self._by_key[key], False, False
        if call.tool == "create_issue":
            self._issues += 1
            record = Record("issue", self._issues, call.id, key, text=f"{args['title']}\n{args['body']}")
        else:
            self._comments += 1
            record = Record("comment", self._comments, call.id, key, issue=args["issue"], text=args["body"])
        self.records.append(record)
        if key is not None and self.mode != "keyless" and (key not in self._by_key or forgot):
            self._by_key[key], self._key_times[key] = record.number, self.clock.hours
            self._unsaved_keys.add(key)
        self._unsaved_records += 1
        return record.number, True, forgot

    def land(self, late: Delivery) -> None:
        """A request sent by a process that has since died arrives now (the fault `late-delivery`).

        It is applied as any request is, but no caller hears the answer and no crash point falls
        within it: it lands between two of the restart's. A fencing tracker refuses it if a lookup
        has fenced its key.
        """
        call, fenced = late.call, late.key in self._fenced
        number, applied, _ = (None, False, False) if fenced else self._apply(call, late.args, late.key)
        self._commit()
        self.points.note("late", call.tool, call=call.id, key=late.key, applied=applied, answer=number, fenced=fenced)

    def _commit(self) -> None:
        self._unsaved_records, self._unsaved_keys = 0, set()

    def unsaved(self) -> tuple[int, frozenset[str]]:
        return self._unsaved_records, frozenset(self._unsaved_keys)

    def search(self, call: Call, query: str) -> list[int]:
        """Read only: the issues whose text mentions `query`. Repeating it is always harmless."""
        self.points.guard("a search request made")
        needle = query.lower()
        found = [r.number for r in self.records if r.kind == "issue" and needle in r.text.lower()]
        self.points.note("request", call.tool, call=call.id, key=None, applied=False, answer=found)
        return found

    def lookup(self, key: str) -> int | None:
        """Did a request with this key happen? Its first answer, or None. Keyed and lookup trackers."""
        self.points.guard("a lookup request made")
        if not self.answers_lookups:
            raise RuntimeError("a keyless tracker cannot be asked about a key")
        answer = self._by_key.get(key)
        fenced = answer is None and self.fences
        if fenced:
            self._fenced.add(key)  # settled as never sent: a late arrival with it is refused
        self.points.note("lookup", "key", key=key, answer=answer, fenced=fenced)
        return answer

    def fenced(self) -> frozenset[str]:
        return frozenset(self._fenced)

    def made_by(self, call_id: str) -> list[Record]:
        """The records a script call caused: the truth the person sees and the verdict counts."""
        return [r for r in self.records if r.call == call_id]

    def keys(self) -> dict[str, int]:
        return dict(self._by_key)

    def key_times(self) -> dict[str, float]:
        return dict(self._key_times)


class Person:
    """The human on call. Never wrong (they look at the tracker), but every question costs them.

    "Did it happen?" questions (`asks`) and approval decisions (`approvals`) are counted apart: the
    first are the price of a loop that cannot settle an unknown outcome by itself, the second are
    the job's own design and should be paid exactly once per gated call.
    """

    def __init__(self, points: Recorder, tracker: TrackerProtocol, approves: bool = True, wrong_at: int = 0):
        self.points = points
        self.tracker = tracker
        self.approves = approves
        self.wrong_at = wrong_at  # the question (1-based, over the scenario) answered wrong; 0 for none
        self.earlier = 0  # records an earlier run left, which the person knows are not this run's
        self.asks = 0
        self.approvals = 0

    def did_it_happen(self, call: Call) -> int | None:
        """Ask whether `call` reached the tracker; the answer is its result, or None.

        The `wrong_at`-th question gets the wrong answer (the fault `wrong-answer`): "no" when it
        happened, and when it did not, "yes" with the newest record of that kind (or #1).
        """
        self.points.guard("a question put to the person")
        self.asks += 1
        made = [r for r in self.tracker.records[self.earlier:] if r.call == call.id]
        answer = made[0].number if made else None
        wrong = self.asks == self.wrong_at
        if wrong:
            kind = "issue" if call.tool == "create_issue" else "comment"
            answer = None if made else max((r.number for r in self.tracker.records if r.kind == kind), default=1)
        question = f"Did call {call.id} ({call.tool}) reach the tracker?"
        self.points.note("ask", call.tool, call=call.id, question=question, answer=answer, wrong=wrong)
        return answer

    def asked_to_approve(self, call: Call) -> None:
        """A gated call's question reaches the person: it counts, whether or not its answer is heard."""
        self.points.guard("an approval asked of the person")
        self.approvals += 1

    def decide(self, call: Call) -> bool:
        """The person's decision on a gated call they were asked about."""
        return self.approves


#: What the approval desk keeps across a crash: every question and decision, or nothing.
DESK_MODES = ("remembers", "forgets")


class ApprovalDesk:
    """Where gated calls wait for the person's decision.

    A process may die while the person is deciding (``approval-asked``) or after the decision and
    before the loop saved it (``approval-decided``). A desk that ``remembers`` (a ticketing queue)
    keeps pending questions and decisions by key, so a restart that comes back with the same key
    gets the same decision and the person is never asked twice. A desk that ``forgets`` (an
    approval asked in a chat, which dies with the process) keeps nothing: only the loop's own saved
    decision spares the person a second question.
    """

    def __init__(
        self,
        points: Recorder,
        person: Person,
        mode: str = "remembers",
        pending: MutableSet[str] | None = None,
        decided: MutableMapping[str, bool] | None = None,
    ):
        if mode not in DESK_MODES:
            raise ValueError(f"unknown desk mode {mode!r} (valid: {', '.join(DESK_MODES)})")
        self.points = points
        self.person = person
        self.remembers = mode == "remembers"
        # Both in memory by default; a world in a database file passes its own durable ones.
        self._pending: MutableSet[str] = set() if pending is None else pending
        self._decided: MutableMapping[str, bool] = {} if decided is None else decided

    def approve(self, call: Call, key: str) -> bool:
        self.points.guard("an approval requested")
        if key in self._decided:
            decision = self._decided[key]
            self.points.note("approval", call.tool, call=call.id, key=key, decided_now=False, approved=decision)
        else:
            if key not in self._pending:
                self.person.asked_to_approve(call)
                if self.remembers:
                    self._pending.add(key)
                self.points.note("approval-request", call.tool, call=call.id, key=key)
                self.points.hit("approval-asked")  # the person is deciding; the process may die meanwhile
            decision = self.person.decide(call)
            if self.remembers:
                self._decided[key] = decision
            self._pending.discard(key)
            self.points.note("approval", call.tool, call=call.id, key=key, decided_now=True, approved=decision)
        self.points.hit("approval-decided")
        return decision


#: How a drifting model answers a turn it is asked for again (the fault `drifting-model`): with call
#: IDs of its own making, or with those and its calls in another order.
DRIFTS = ("ids", "order")


def intended(call_id: str) -> str:
    """The script's call that a model's call ID stands for: a drifting model names A ``A#2`` the second
    time it is asked for A's turn (``#`` is in no job's IDs). What the verdict counts effects against."""
    return call_id.partition("#")[0]


class Model:
    """The scripted model: asked for turn k, it gives the script's reply k.

    Asked again for a turn, it repeats the call IDs, as a replayed model does. One that `drift`s
    answers as a provider does, with call IDs of its own making, and under ``order`` with its calls
    in another order (reversed, unless a call refers to another of the same reply). A later reply
    refers to an earlier call by the name it was last given, as a model that reads the saved
    conversation back does.
    """

    def __init__(self, points: Recorder, job: Job, drift: str = ""):
        self.points = points
        self.job = job
        self.calls = 0
        self.drift = drift
        self.asked: dict[int, int] = {}  # how many times a drifting model was asked for each turn

    def reply(self, turn: int) -> Turn:
        """The reply that opens `turn` (1-based)."""
        self.points.guard("a model call made")
        self.calls += 1
        reply = self.job.turns[turn - 1]
        if self.drift:  # a scripted model needs no memory of what it was asked
            self.asked[turn] = self.asked.get(turn, 0) + 1
            reply = reply if reply.is_final else self._drifted(turn, reply)
        summary = f"answer {reply.answer!r}" if reply.is_final else " ".join(c.id for c in reply.calls)
        self.points.note("model", "reply", call_count=self.calls, reply=summary)
        return reply

    def _drifted(self, turn: int, reply: Turn) -> Turn:
        names = {c.id: self._name(t, c.id) for t, r in enumerate(self.job.turns[:turn], start=1) for c in r.calls}
        calls = [replace(c, id=names[c.id], args=c.args if c.ref is None else {**c.args, "issue": f"${names[c.ref]}"})
                 for c in reply.calls]
        own = {c.id for c in reply.calls}
        if self.drift == "order" and self.asked[turn] > 1 and not any(c.ref in own for c in reply.calls):
            calls.reverse()
        return replace(reply, calls=tuple(calls))

    def _name(self, turn: int, call_id: str) -> str:
        times = self.asked.get(turn, 1)
        return call_id if times == 1 else f"{call_id}#{times}"


@dataclass(frozen=True)
class WorldState:
    """All that a death leaves of the world, as one value: what a restart starts from (but for a
    request still in flight, which the fault `late-delivery` sweeps by re-execution).

    Two crash points that leave equal states have equal futures (the loops are deterministic), so
    the sweep runs a restart once per distinct state. Every field is sorted or ordered, so that equal
    worlds give equal values in any process.
    """

    tracker_mode: str
    desk_mode: str
    approves: bool
    records: tuple[Record, ...]
    keys: tuple[tuple[str, int], ...]
    asks: int
    approvals: int
    pending: tuple[str, ...]
    decided: tuple[tuple[str, bool], ...]
    model_calls: int
    servers_died: tuple[str, ...]
    wrong_at: int = 0  # the person's question answered wrong (the fault `wrong-answer`), 0 for none
    earlier: int = 0  # the records an earlier run of the job left (the fault `reused-run-id`)
    hours: float = 0.0  # the world's clock
    key_times: tuple[tuple[str, float], ...] = ()
    drift: str = ""  # how the model answers a turn asked again (the fault `drifting-model`), "" as scripted
    commit: str = ""  # how the tracker makes a request durable (the fault `tracker-crash`), "" it loses none
    asked: tuple[tuple[int, int], ...] = ()  # how many times the model was asked for each turn
    fenced: tuple[str, ...] = ()  # the keys a fencing tracker's lookups settled as never sent


@dataclass
class World:
    tracker: TrackerProtocol
    person: Person
    desk: ApprovalDesk
    model: Model
    #: Calls whose tool server has already died once after the tracker accepted them.
    servers_died: MutableSet[str] = field(default_factory=set)
    clock: Clock = field(default_factory=Clock)
    #: Whether a changing request spends time on the wire (the fault `late-delivery`): between the
    #: crash point ``sent`` and the tracker, it is `in_flight`, and a death then leaves it there.
    late: bool = False
    in_flight: Delivery | None = None

    @property
    def earlier(self) -> int:
        """How many of the tracker's records an earlier run of the job left: none but under `reused-run-id`."""
        return self.person.earlier

    def made_by(self, call_id: str) -> list[Record]:
        """The records the job's call `call_id` made in this run, under any ID the model gave it, not
        counting an earlier run's: what the verdict counts."""
        return [r for r in self.tracker.records[self.earlier:] if intended(r.call) == call_id]

    @classmethod
    def new(
        cls, job: Job, points: Recorder, tracker_mode: str = "keyed", approves: bool = True, desk: str = "remembers",
        wrong_at: int = 0, drift: str = "", commit: str = "", late: bool = False,
    ) -> World:
        clock = Clock()
        tracker = Tracker(points, tracker_mode, clock, commit)
        person = Person(points, tracker, approves, wrong_at)
        return cls(tracker, person, ApprovalDesk(points, person, desk), Model(points, job, drift), clock=clock,
                   late=late)

    def state(self) -> WorldState:
        """What a death leaves: all of it, but what the tracker had not yet made durable."""
        desk, tracker = self.desk, self.tracker
        lost, lost_keys = tracker.unsaved()
        records = tracker.records[: len(tracker.records) - lost]
        return WorldState(
            tracker_mode=tracker.mode,
            desk_mode="remembers" if desk.remembers else "forgets",
            approves=self.person.approves,
            records=tuple(records),
            keys=tuple(sorted((k, n) for k, n in tracker.keys().items() if k not in lost_keys)),
            asks=self.person.asks,
            approvals=self.person.approvals,
            pending=tuple(sorted(desk._pending)),
            decided=tuple(sorted(desk._decided.items())),
            model_calls=self.model.calls,
            servers_died=tuple(sorted(self.servers_died)),
            wrong_at=self.person.wrong_at,
            earlier=self.earlier,
            hours=self.clock.hours,
            key_times=tuple(sorted((k, t) for k, t in tracker.key_times().items() if k not in lost_keys)),
            drift=self.model.drift,
            commit=tracker.commit,
            asked=tuple(sorted(self.model.asked.items())),
            fenced=tuple(sorted(tracker.fenced())),
        )

    @classmethod
    def restore(cls, state: WorldState, job: Job, points: Recorder) -> World:
        """A world in memory that holds exactly `state`, for a restart to run against."""
        world = cls.new(job, points, state.tracker_mode, state.approves, state.desk_mode, state.wrong_at, state.drift,
                        state.commit)
        tracker = world.tracker
        tracker.records = list(state.records)
        tracker._issues = sum(1 for r in state.records if r.kind == "issue")
        tracker._comments = len(state.records) - tracker._issues
        tracker._by_key, tracker._key_times = dict(state.keys), dict(state.key_times)
        tracker._fenced = set(state.fenced)
        world.clock.hours = state.hours
        world.person.asks, world.person.approvals, world.person.earlier = state.asks, state.approvals, state.earlier
        world.desk._pending.update(state.pending)
        world.desk._decided.update(state.decided)
        world.model.calls, world.model.asked = state.model_calls, dict(state.asked)
        world.servers_died.update(state.servers_died)
        return world
