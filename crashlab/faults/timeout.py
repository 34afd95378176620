"""`timeout`: the loop's client gives up waiting for a reply, and the loop's own retry policy resends.

No process dies: the most common cause of duplicates in production needs no crash at all. The
K-th changing request of the run times out in one of two ways the client cannot tell apart: the
tracker applied it and the reply was lost (``=K-applied``), or it never reached the tracker
(``=K-lost``). The caller hears `crashlab.world.NoReply`, an unknown outcome. Keys absorb the resend;
a keyless loop's retry duplicates an applied request; the agent's loop settles the call on its
resolution ladder instead of retrying blindly. ``after-reply+timeout=1-applied`` is the run itself,
with no crash; ``after-reply+timeout=1-applied:12`` crashes it at point 12 too.
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
from crashlab.world import NoReply, Nth, Parts, Wire

if TYPE_CHECKING:
    from crashlab.protocols.scenario import ScenarioRun

#: The two ways a request can time out: applied, its reply lost; or lost before the tracker saw it.
WAYS = ("applied", "lost")


class Deadline(Nth):
    """A length of wire on which the `at`-th changing request of the scenario gets no reply in time."""

    def __init__(self, inner: Wire, at: int, applied: bool):
        super().__init__(inner, at)
        self.applied = applied

    def send(self, call: Call, args: dict[str, Any], key: str | None) -> int:
        if not self.counted():
            return self.inner.send(call, args, key)
        answer = self.inner.send(call, args, key) if self.applied else None
        self.tracker.points.note("no-reply", call.tool, call=call.id, key=key, applied=self.applied, answer=answer)
        raise NoReply(f"no reply to {call.tool} {call.id} in time")


class Timeout(Fault):
    slug = "timeout"
    breaks = ("the loop's client gives up waiting for a reply and its retry policy resends, with no crash at all: "
              "the tracker had applied the request and the reply was lost, or the request never reached it")
    adds = ("for each changing request K of the uninterrupted run, that run with request K timing out each way (ID "
            "SLUG+timeout=K-applied or K-lost, no crash), and every crash scenario of it")
    without_crash = True

    @classmethod
    def configured(cls, value: str | None = None) -> Fault:
        """Every request in turn, each way, in a sweep; the one `value` names (``2-applied``) in a scenario's ID."""
        if value and not re.fullmatch(rf"[1-9][0-9]{{0,8}}-({'|'.join(WAYS)})", value):
            raise BadInput(f"+timeout={value}: name the changing request that times out, counted from 1, and how: "
                           f"=K-applied (its reply lost) or =K-lost (it never arrived), e.g. =2-applied")
        return cls(value or "")

    def parts(self, parts: Parts) -> Parts:
        at, _, way = self.value.partition("-")
        return replace(parts, relays=(*parts.relays, partial(Deadline, at=int(at), applied=way == "applied")))

    def variations(self, without: Swept) -> Iterable[Fault]:
        requests = sum(1 for e in without.first.points.events
                       if e.kind == "request" and e.label != "search" and e.process == 1)
        return [Timeout(f"{k}-{way}") for k in range(1, requests + 1) for way in WAYS]

    def acted(self, run: ScenarioRun) -> bool:
        return any(e.kind == "no-reply" for e in run.points.events)

    def serve(self, serving: Serving) -> Serving:
        """The service answers the K-th changing request with a 504 instead of its reply, having applied it or not."""
        return replace(serving, no_reply=self.value)

    def note(self, event: Event) -> str | None:
        if event.kind != "no-reply":
            return None
        d = event.detail
        sent = f"key {d['key'][:12]}…" if d["key"] else "no key"
        done = f"the tracker had APPLIED it, #{d['answer']}, and its reply was lost" if d["applied"] \
            else "it never reached the tracker"
        return f"NO REPLY in time to {event.label} {d['call']} ({sent}): {done}; the outcome is unknown to the loop"
