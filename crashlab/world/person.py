"""The person on call, and the approval desk through which gated calls reach them."""

from __future__ import annotations

from collections.abc import MutableMapping, MutableSet
from typing import Literal, get_args

from crashlab.job import Call
from crashlab.protocols.points import Recorder
from crashlab.world.tracker import Record, TrackerProtocol


class Person:
    """The human on call. They look at the tracker and answer truthfully, but every question costs them.

    "Did it happen?" questions (`asks`) and approval decisions (`approvals`) are counted apart: the
    first are the price of a loop that cannot settle an unknown outcome by itself, the second are
    the job's own design and should be paid exactly once per gated call.
    """

    def __init__(self, points: Recorder, tracker: TrackerProtocol, approves: bool = True):
        self.points = points
        self.tracker = tracker
        self.approves = approves
        self.earlier = 0  # records an earlier run left, which the person knows are not this run's
        self.asks = 0
        self.approvals = 0

    def did_it_happen(self, call: Call) -> int | None:
        """Ask whether `call` reached the tracker; the answer is its result, or None."""
        self.points.guard("a question put to the person")
        self.asks += 1
        made = [r for r in self.tracker.records[self.earlier:] if r.call == call.id]
        truth = made[0].number if made else None
        answer = self.answer(call, made)
        question = f"Did call {call.id} ({call.tool}) reach the tracker?"
        self.points.note("ask", call.tool, call=call.id, question=question, answer=answer, truth=truth)
        return answer

    def answer(self, call: Call, made: list[Record]) -> int | None:
        """What the person says of `call`, given the records it made: the first one's number, or no."""
        return made[0].number if made else None

    def asked_to_approve(self, call: Call) -> None:
        """A gated call's question reaches the person: it counts, whether or not its answer is heard."""
        self.points.guard("an approval asked of the person")
        self.approvals += 1

    def decide(self, call: Call) -> bool:
        """The person's decision on a gated call they were asked about."""
        return self.approves


#: What the approval desk keeps across a crash: every question and decision, or nothing.
DeskMode = Literal["remembers", "forgets"]
DESK_MODES: tuple[DeskMode, ...] = get_args(DeskMode)


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
        mode: DeskMode = "remembers",
        pending: MutableSet[str] | None = None,
        decided: MutableMapping[str, bool] | None = None,
    ):
        if mode not in DESK_MODES:
            raise ValueError(f"unknown desk mode {mode!r} (valid: {', '.join(DESK_MODES)})")
        self.points = points
        self.person = person
        self.remembers = mode == "remembers"
        # Both in memory by default; a world in a database file passes its own durable ones.
        self.pending: MutableSet[str] = set() if pending is None else pending
        self.decided: MutableMapping[str, bool] = {} if decided is None else decided

    def approve(self, call: Call, key: str) -> bool:
        self.points.guard("an approval requested")
        if key in self.decided:
            decision = self.decided[key]
            self.points.note("approval", call.tool, call=call.id, key=key, decided_now=False, approved=decision)
        else:
            if key not in self.pending:
                self.person.asked_to_approve(call)
                if self.remembers:
                    self.pending.add(key)
                self.points.note("approval-request", call.tool, call=call.id, key=key)
                self.points.hit("approval-asked")  # the person is deciding; the process may die meanwhile
            decision = self.person.decide(call)
            if self.remembers:
                self.decided[key] = decision
            self.pending.discard(key)
            self.points.note("approval", call.tool, call=call.id, key=key, decided_now=True, approved=decision)
        self.points.hit("approval-decided")
        return decision
