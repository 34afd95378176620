"""`late-delivery`: a request the dead process sent lands after the restart has asked about it and resent it.

A changing request spends time on the wire, at the crash point ``sent``, and a death there leaves it
in flight. It lands in the restart, at any of the restart's crash points or after its last, each a
scenario: ``agent-lookup+late-delivery:12~3`` lands at the third point of the restart of a crash at
point 12. The restart crashes no more. A tracker that answers lookups says "no" to a request not yet
landed and takes the resend and the late arrival both; one that fences the key on that "no" refuses
the late arrival, and a keyed tracker answers it from the resend's key.

A loop whose tools call crashlab's service meets the same fault there (`serve`): the service passes
``sent`` as each changing request arrives, holds the request of a loop killed there, and lands it
when the harness says (`crashlab.runners.served.Landing`).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, replace
from itertools import count
from typing import Any

from crashlab.errors import BadInput
from crashlab.job import Call
from crashlab.protocols.death import Death, Left, NoSuchChoice
from crashlab.protocols.fault import Fault, Serving
from crashlab.protocols.points import Event
from crashlab.world import Parts, Relay, Tracker, Wire


@dataclass(frozen=True)
class Delivery:
    """A changing request on the wire: sent, not yet applied."""

    call: Call
    args: dict[str, Any]
    key: str | None


class InFlight(Relay):
    """A length of wire on which a changing request spends time, at the crash point ``sent``.

    In a restart, it holds the request a dead process left in flight, and delivers it as the restart
    passes its `landing` point, or after the restart's last point if that is where it lands.
    """

    def __init__(self, inner: Wire):
        super().__init__(inner)
        self.in_flight: Delivery | None = None
        self.landing: tuple[Delivery, int] | None = None
        self.landed = False

    def send(self, call: Call, args: dict[str, Any], key: str | None) -> int:
        self.in_flight = Delivery(call, args, key)
        self.tracker.points.hit("sent")
        self.in_flight = None
        return self.inner.send(call, args, key)

    def state(self) -> Any:
        return self.landing if self.landing is not None and not self.landed else ()

    def restore(self, state: Any) -> None:
        if state:
            self.landing = state
            self.tracker.points.observers.append(self.reached)

    def reached(self) -> None:
        if self.landing is not None and not self.landed and self.tracker.points.passed == self.landing[1]:
            self.land()

    def finish(self) -> None:
        if self.landing is None or self.landed:
            return
        passed = self.tracker.points.passed
        if self.landing[1] != passed + 1:
            raise NoSuchChoice(f"{self.tracker.points.scenario}: the restart passes {passed} crash points, so a "
                               f"late request lands at one of them or after the last (~1 to ~{passed + 1})")
        self.land()

    def land(self) -> None:
        """The request arrives: applied as any request is, but no caller hears the answer."""
        delivery, _ = self.landing or (None, 0)
        assert delivery is not None
        call, tracker = delivery.call, self.tracker
        assert isinstance(tracker, Tracker), "a request in flight lands on a tracker in memory"
        done = tracker.receive(call, delivery.args, delivery.key)
        self.landed = True
        self.tracker.points.note("late", call.tool, call=call.id, key=delivery.key, applied=bool(done and done.made),
                                 answer=done.number if done else None, fenced=delivery.key in tracker.fenced())


@dataclass(frozen=True)
class Landings:
    """The states a death with a request in flight leaves: one for each point of the restart where it may
    land, from the first on, found as the restart runs. A plain value, so a branch can grow elsewhere."""

    left: Left
    layer: int  # where on the wire the request was
    delivery: Delivery

    def __iter__(self) -> Iterator[Left]:
        call, world = self.delivery.call, self.left.durable.world
        for k in count(1):
            wire = (*world.wire[:self.layer], (self.delivery, k), *world.wire[self.layer + 1:])
            yield self.left.then(f"the request of {call.id} ({call.tool}) that the dead process sent was in flight: "
                                 f"it lands as the restart passes its point {k}, or after the restart's end",
                                 k, replace(self.left.durable, world=replace(world, wire=wire)), at_point=k)


class LateDelivery(Fault):
    slug = "late-delivery"
    breaks = ("a request the dead process sent lands after the restart asked about it and heard 'no', and resent it: "
              "a tracker that only answers lookups takes both")
    adds = ("a crash point, sent, where a request is on the wire; for each death there, one scenario per crash point "
            "of the restart where it lands, or after its last (ID SLUG+late-delivery:I~K, one crash)")
    chooses = True
    open_ended = True

    def parts(self, parts: Parts) -> Parts:
        return replace(parts, relays=(*parts.relays, InFlight))

    def depth(self, depth: int) -> int:
        return 1  # where the request lands changes the restart from there on: it crashes no more

    def left(self, left: Left, death: Death) -> Iterable[Left]:
        layers = list(death.world.wire.layers())
        at = next(k for k, layer in enumerate(layers) if isinstance(layer, InFlight))
        delivery = layers[at].in_flight  # type: ignore[attr-defined]
        if delivery is None:
            return ()  # nothing in flight: a death here is no scenario of this fault
        return Landings(left, at, delivery)

    def serve(self, serving: Serving) -> Serving:
        """A changing request passes ``sent`` as it reaches the service; a death there leaves it held, to land
        at a point of the restart. The service's commit points would come in the middle of a landing."""
        if serving.steps or serving.dies:
            raise BadInput("--fault late-delivery cannot be swept with a service that dies between its commit "
                           "steps (tracker-crash) on a loop that calls the service: choose one")
        return replace(serving, late=True)

    def note(self, event: Event) -> str | None:
        if event.kind != "late":
            return None
        d = event.detail
        sent = f"key {d['key'][:12]}…" if d["key"] else "no key"
        if d["fenced"]:
            done = "the tracker REFUSES it: a lookup fenced its key"
        elif d["applied"]:
            done = f"the tracker APPLIES it, #{d['answer']}"
        elif d["answer"] is None:
            done = "the tracker REFUSES it: no issue to comment on, or its key keeps that refusal"
        else:
            done = f"the tracker knows the key, #{d['answer']}, changes nothing"
        return f"LATE: the request of {d['call']} ({event.label}, {sent}) that the dead process sent lands now: {done}"
