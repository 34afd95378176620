"""`drifting-model`: a real model asked again for a turn does not repeat itself.

A model that drifts names the calls of a reply it gives again anew, ``A#2`` for A the second time
(``--drift ids``), and under ``--drift order`` also reverses them where no call of the reply refers
to another. For a program swept with ``--command`` and ``--job``, the model crashlab's service plays
drifts the same way under ``--drift ids`` (`crashlab.service.script`, ``--model-ids drifting``): a
turn asked again gets the same calls under new tool-call IDs. Duplicates and missing effects are
counted by the job's call each record stands for, and a record filed under a name the run later
replaced is an orphan too.
"""

from __future__ import annotations

from dataclasses import replace
from functools import partial
from typing import Any, ClassVar

from crashlab.errors import BadInput
from crashlab.job import Job, Turn
from crashlab.protocols.fault import Fault, Serving, Setting
from crashlab.protocols.points import Recorder
from crashlab.world import Model, Parts

DRIFTS = ("ids", "order")


class DriftingModel(Model):
    """A model that answers a turn it is asked for again with call IDs of its own making, and under
    ``order`` with its calls in another order (reversed, unless a call refers to another of the same
    reply). A later reply refers to an earlier call by the name it was last given, as a model that reads
    the saved conversation back does."""

    def __init__(self, points: Recorder, job: Job, drift: str = "ids"):
        super().__init__(points, job)
        self.drift = drift
        self.asked: dict[int, int] = {}  # how many times it was asked for each turn

    def answer(self, turn: int) -> Turn:
        self.asked[turn] = self.asked.get(turn, 0) + 1
        reply = self.job.turns[turn - 1]
        if reply.is_final:
            return reply
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

    def state(self) -> Any:
        return tuple(sorted(self.asked.items()))

    def restore(self, state: Any) -> None:
        self.asked = dict(state)


class DriftingModelFault(Fault):
    slug = "drifting-model"
    breaks = ("asked again for a turn, the model names its calls anew, as a provider does (--drift ids), and may "
              "order them anew (--drift order): new call IDs make new keys")
    adds = ("every crash scenario, the model drifting; effects counted by what each call means, not by its ID; "
            "orphans: records of a call the model later renamed")
    settings: ClassVar[tuple[Setting, ...]] = (
        Setting("drift", DRIFTS, "ids", "With --fault drifting-model, how the model answers a turn it is asked for "
                "again: ids, with call IDs of its own making; order, with those and its calls in another order."),
    )
    replaces: ClassVar[frozenset[str]] = frozenset({"model"})

    def parts(self, parts: Parts) -> Parts:
        return replace(parts, model=partial(DriftingModel, drift=self.value))

    def serve(self, serving: Serving) -> Serving:
        """The service's model names a turn's calls anew each time it is asked again; it keeps their order, so
        ``--drift order`` has no form there yet."""
        if self.chosen("drift") != "ids":
            raise BadInput("--drift order has no form yet where crashlab's service plays the model: it names a turn's "
                           "calls anew but keeps their order (--drift ids)")
        return replace(serving, model_ids="drifting")
