"""Fault models: what can break beyond the chapter's crash, each swept as scenarios of its own.

The default, `crash`, is the chapter's: the loop's process dies at a crash point, and the OS cache,
the tracker and the person outlive it, the person never wrong. Each other fault adds one choice to a
scenario, and the choice is part of the scenario's ID, so `explain` can replay it.

`wrong-answer`: the person is the ladder's last rung, and a person can be wrong. For every question
a crash scenario puts to the person, the same scenario runs again with that one answer wrong: "no"
when the call did happen (the loop makes it again: a duplicate), "yes, #N" when it did not (the loop
believes it done: a missing effect, and a result that names a record the call never made). Its ID is
the crash scenario's with ``~K``: ``markers:12~1`` answers the first question wrong.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from .job import Job
from .sweep import ScenarioResult, StoreFactory, Variant, sweep_variant


@dataclass(frozen=True)
class Fault:
    slug: str
    breaks: str  # what goes wrong
    adds: str  # what the sweep runs for it


FAULTS: dict[str, Fault] = {f.slug: f for f in (
    Fault("crash", "the loop's process dies at a crash point; the OS cache, the tracker and the person outlive it",
          "nothing: the chapter's sweep, the book's table"),
    Fault("wrong-answer", "the person answers one 'did it happen?' question wrong: 'no' when it did, 'yes, #N' when "
                          "it did not",
          "for each question a crash scenario asks, that scenario with that one answer wrong (ID SLUG:I:J~K)"),
)}


@dataclass(frozen=True)
class WrongAnswers:
    """A variant's wrong-answer sweep: the crash scenarios it starts from, and one scenario per question."""

    variant: str
    name: str
    crash_scenarios: int
    asked: int  # crash scenarios that asked the person at least once
    scenarios: tuple[ScenarioResult, ...]

    def record(self) -> dict[str, int | str]:
        outcomes = [s.outcome for s in self.scenarios]
        return {
            "variant": self.variant, "name": self.name, "crash_scenarios": self.crash_scenarios, "asked": self.asked,
            "scenarios": len(outcomes), "with_dups": sum(1 for o in outcomes if o.extra),
            "dups": sum(o.extra for o in outcomes), "missing": sum(len(o.missing) for o in outcomes),
            "wrong": sum(len(o.wrong) for o in outcomes),
        }


def wrong_answers(variant: Variant, job: Job, store: StoreFactory, depth: int = 2) -> WrongAnswers:
    """For each K, the sweep with the person's K-th answer wrong; of it, the scenarios that asked K questions.

    A wrong answer changes what the loop does next, so each K is a sweep of its own (shared, as the
    crash sweep is): the restarts' crash points are those they reach after the wrong answer.
    """
    crash = list(sweep_variant(variant, job, store, depth).scenarios())
    found: list[ScenarioResult] = []
    for k in range(1, max((s.outcome.asks for s in crash), default=0) + 1):
        for s in sweep_variant(variant, job, store, depth, wrong_at=k).scenarios():
            if s.outcome.asks >= k:  # the K-th question was put, and answered wrong
                found.append(replace(s, id=f"{s.id}~{k}"))
    found.sort(key=lambda s: (s.crashes, s.id))
    asked = sum(1 for s in crash if s.outcome.asks)
    return WrongAnswers(variant.slug, variant.name, len(crash), asked, tuple(found))
