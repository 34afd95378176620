"""`interleave`: a reply's parallel tool calls reach the world in another order.

A loop that runs its tool calls on threads is scheduled by the harness (`crashlab.engine.schedule`):
one thread runs at a time, and at each crash point, task start and end, and wait on another thread,
a decision names which goes on. The plain sweep runs the default schedule (a thread goes on until it
blocks or ends, then the first by number). Under this fault, the sweep also runs every schedule that
departs from the default at one decision of the uninterrupted run, each a tree of its own (the
schedules CHESS bounds by one preemption), up to `LIMIT` of them, the default first. Its value is
the schedule: the option taken at each decision with several, from 1, dot-joined
(``langgraph-parallel+interleave=1.1.2:5``: the first process takes the second thread at its third
decision, and dies at its fifth crash point). Restarts run the default schedule.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, ClassVar

from crashlab.errors import BadInput
from crashlab.faults import Capability, Fault, Serving

if TYPE_CHECKING:
    from crashlab.engine.scenario import ScenarioRun
    from crashlab.engine.tree import VariantSweep

#: How many schedules a sweep under the fault runs at most, the default's included; the environment's
#: ``CRASHLAB_INTERLEAVINGS`` sets another. The table says how many it ran of how many there were.
LIMIT = int(os.environ.get("CRASHLAB_INTERLEAVINGS", "8"))


def schedules(decisions: Sequence[tuple[int, bool]], limit: int = LIMIT) -> tuple[list[tuple[int, ...]], int]:
    """The schedules one departure from the default makes, the default first, up to `limit`, and how many
    there are. `decisions` is each decision of the default run: its number of options, and whether taking
    another preempts a thread at a crash point. As CHESS orders them, the departures that preempt no
    thread (another task begins when one blocks or ends: another order of a reply's calls) come first,
    in the order of the run, and then those that preempt one."""
    free = [(1,) * k + (pick,) for k, (options, preempts) in enumerate(decisions) if not preempts
            for pick in range(2, options + 1)]
    preempting = [(1,) * k + (pick,) for k, (options, preempts) in enumerate(decisions) if preempts
                  for pick in range(2, options + 1)]
    found = [(1,), *free, *preempting]
    return found[:limit], len(found)


def decisions_of(run: ScenarioRun) -> list[tuple[int, bool]]:
    """The decisions of `run`'s first process, as `schedules` takes them."""
    return [(int(e.detail["options"]), bool(e.detail.get("preempts"))) for e in run.points.events
            if e.kind == "schedule" and e.process == 1]


class Interleave(Fault):
    slug = "interleave"
    breaks = "the threads a loop runs its tool calls on take turns in another order, decided at each crash point"
    adds = ("the default schedule, and each schedule that departs from it at one decision of the uninterrupted "
            f"run, up to {LIMIT} (ID SLUG+interleave=P.Q.R:I, each the thread taken at a decision)")
    needs: ClassVar[frozenset[Capability]] = frozenset()

    @classmethod
    def configured(cls, value: str | None = None) -> Fault:
        """Every schedule in turn, in a sweep; the one `value` names, in a scenario's ID."""
        parts = value.split(".") if value else []
        if not all(p.isascii() and p.isdigit() and int(p) > 0 and len(p) < 4 for p in parts) or len(parts) > 10_000:
            raise BadInput(f"+interleave={value}: a schedule is the option taken at each decision, from 1, "
                           "dot-joined (=1, =1.2, ...)")
        while len(parts) > 1 and parts[-1] == "1":
            parts.pop()
        return cls(".".join(parts))

    def schedule(self) -> tuple[int, ...]:
        return tuple(int(p) for p in self.values)

    def variations(self, without: VariantSweep) -> Iterable[Fault]:
        return [Interleave(".".join(map(str, picks))) for picks in schedules(decisions_of(without.first))[0]]

    def explored(self, sweep: VariantSweep) -> str:
        """How many schedules the sweep ran, of how many one departure from the default makes."""
        if self.value:
            return f"={self.value}"
        return f"{len(sweep.trees)} of {schedules(decisions_of(sweep.first))[1]}"

    def serve(self, serving: Serving) -> Serving:
        return serving
