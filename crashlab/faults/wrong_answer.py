"""`wrong-answer`: the person is the ladder's last rung, and a person can be wrong.

For every question a crash scenario puts to the person, the same scenario runs again with that one
answer wrong: "no" when the call did happen (the loop makes it again: a duplicate), "yes, #N" when
it did not (the loop believes it done: a missing effect, and a result that names a record the call
never made). ``markers+wrong-answer=1:12`` answers the first question of scenario ``markers:12`` wrong.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace
from functools import partial
from typing import TYPE_CHECKING, ClassVar

from crashlab.errors import BadInput
from crashlab.job import Call
from crashlab.protocols.fault import Fault, Serving, Swept
from crashlab.protocols.points import Recorder
from crashlab.world import Parts, Person, Record, TrackerProtocol

if TYPE_CHECKING:
    from crashlab.protocols.scenario import ScenarioResult, ScenarioRun


class WrongPerson(Person):
    """A person who answers the `wrong_at`-th question of the scenario wrong: "no" when the call happened,
    and when it did not, "yes" with the newest record of that kind (or #1)."""

    def __init__(self, points: Recorder, tracker: TrackerProtocol, approves: bool = True, wrong_at: int = 0):
        super().__init__(points, tracker, approves)
        self.wrong_at = wrong_at

    def answer(self, call: Call, made: list[Record]) -> int | None:
        if self.asks != self.wrong_at:
            return super().answer(call, made)
        kind = "issue" if call.tool == "create_issue" else "comment"
        return None if made else max((r.number for r in self.tracker.records if r.kind == kind), default=1)


class WrongAnswer(Fault):
    slug = "wrong-answer"
    breaks = "the person answers one 'did it happen?' question wrong: 'no' when it did, 'yes, #N' when it did not"
    adds = ("for each question a crash scenario asks, that scenario with that one answer wrong "
            "(ID SLUG+wrong-answer=K:I:J, K the question)")
    replaces: ClassVar[frozenset[str]] = frozenset({"person"})

    @classmethod
    def configured(cls, value: str | None = None) -> Fault:
        """Every question in turn, in a sweep; the `value`-th, in a scenario's ID."""
        if value and not (value.isascii() and value.isdigit() and int(value) > 0 and len(value) < 10):
            raise BadInput(f"+wrong-answer={value}: the question answered wrong is counted from 1 (=1, =2, ...)")
        return cls(value or "")

    @property
    def question(self) -> int:
        return int(self.value)

    def parts(self, parts: Parts) -> Parts:
        return replace(parts, person=partial(WrongPerson, wrong_at=self.question))

    def variations(self, without: Swept) -> Iterable[Fault]:
        asked = max((s.outcome.asks for s in without.scenarios()), default=0)
        return [WrongAnswer(str(k)) for k in range(1, asked + 1)]

    def keeps(self, result: ScenarioResult) -> bool:
        return result.outcome.asks >= self.question  # the question was put, and answered wrong

    def acted(self, run: ScenarioRun) -> bool:
        return run.world.person.asks >= self.question

    def serve(self, serving: Serving) -> Serving:
        """The service's person answers the same question wrong: its questions are counted across the scenario."""
        return replace(serving, wrong_at=self.question if self.value else 0)
