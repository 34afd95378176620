"""`failed-after-effect`: the tracker makes a request's effect, then answers a failure (a 5xx).

The case where the providers' contracts part ways (`crashlab.profiles`): the K-th changing request
of the run is committed, and its caller hears `crashlab.world.Failed`. What a retry under the same
key gets is the profile's ``after_failure``: the success (``replay-effect``: the draft as crashlab
reads it, Stripe v2, TrueLayer, Worldline), the failure again and no second effect (``replay-failure``:
Stripe v1), or a fresh request that makes the effect again (``run-again``: only a 2xx is kept, as at
Checkout.com, ACP and Qonto). A keyless retry makes it again under every profile. No process
need die: ``keys+failed-after-effect=2`` is the run itself, its second changing request failing;
``keys+failed-after-effect=2:12`` crashes it at point 12 too.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import replace
from functools import partial
from typing import TYPE_CHECKING, Any

from crashlab.errors import BadInput
from crashlab.job import Call
from crashlab.protocols.fault import Fault, Serving, Swept
from crashlab.protocols.points import Event
from crashlab.world import Failed, Nth, Parts, Tracker

if TYPE_CHECKING:
    from crashlab.protocols.scenario import ScenarioRun


class FailsAfterEffect(Nth):
    """A length of wire in front of the tracker on which the `at`-th changing request of the scenario is made,
    then answered with a failure; a retry under a key that keeps the failure gets it again."""

    def send(self, call: Call, args: dict[str, Any], key: str | None) -> int:
        nth = self.counted()
        tracker = self.tracker
        assert isinstance(tracker, Tracker), "a failure after the effect is made by a tracker in memory"
        if tracker.replays_failure(key):
            tracker.points.note("server-error", call.tool, call=call.id, key=key, applied=False, answer=None)
            raise Failed(f"{call.tool} {call.id}: 500 again, the failure its key keeps")
        made = len(tracker.records)
        answer = self.inner.send(call, args, key)
        if not nth:
            return answer
        applied = len(tracker.records) > made
        if applied:
            tracker.failed(key)
        tracker.points.note("server-error", call.tool, call=call.id, key=key, applied=applied, answer=answer)
        raise Failed(f"{call.tool} {call.id}: 500, the tracker failed after handling it")


class FailedAfterEffect(Fault):
    slug = "failed-after-effect"
    breaks = ("the tracker makes a changing request's effect and then answers a failure (5xx), with no crash at all: "
              "what a retry under the same key gets is the profile's to say (the success, the failure again, or the "
              "effect made again)")
    adds = ("for each changing request K of the uninterrupted run, that run with request K failing after its effect "
            "(ID SLUG+failed-after-effect=K, no crash), and every crash scenario of it")
    without_crash = True

    @classmethod
    def configured(cls, value: str | None = None) -> Fault:
        """Every request in turn in a sweep; the one `value` names (``2``) in a scenario's ID."""
        if value and not re.fullmatch(r"[1-9][0-9]{0,8}", value):
            raise BadInput(f"+failed-after-effect={value}: name the changing request that fails after its effect, "
                           "counted from 1, e.g. =2")
        return cls(value or "")

    def parts(self, parts: Parts) -> Parts:
        return replace(parts, relays=(*parts.relays, partial(FailsAfterEffect, at=int(self.value))))

    def variations(self, without: Swept) -> Iterable[Fault]:
        requests = sum(1 for e in without.first.points.events
                       if e.kind == "request" and e.label != "search" and e.process == 1)
        return [FailedAfterEffect(str(k)) for k in range(1, requests + 1)]

    def acted(self, run: ScenarioRun) -> bool:
        return any(e.kind == "server-error" for e in run.points.events)

    def serve(self, serving: Serving) -> Serving:
        """The service commits its K-th changing request, then answers it with a 500."""
        return replace(serving, failed_after=int(self.value or 0))  # none yet while the sweep finds its choices

    def note(self, event: Event) -> str | None:
        if event.kind != "server-error":
            return None
        d = event.detail
        sent = f"key {d['key'][:12]}…" if d["key"] else "no key"
        if d["applied"]:
            return (f"{event.label} {d['call']} ({sent}): the tracker MADE it, #{d['answer']}, then answered 500; the "
                    "loop cannot tell")
        if d["answer"] is not None:
            return f"{event.label} {d['call']} ({sent}): the tracker answered it from its key, then answered 500"
        return f"{event.label} {d['call']} ({sent}): the tracker answers 500 again, the failure its key keeps"
