"""The wire: the path a changing request takes from a loop's tool to the tracker.

Here it is direct, and a request is applied the moment it is sent. A fault can lengthen it, one
`Relay` around another: a request that spends time in flight, a reply that never comes back. The
errors below are what a tool's caller sees when the wire fails it; each leaves the outcome unknown.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from crashlab.job import Call
from crashlab.world.tracker import TrackerProtocol


class UnknownOutcome(Exception):
    """A changing request whose fate its caller cannot know: the tracker may or may not have applied it."""


class TransportError(UnknownOutcome):
    """The tool's server died mid-call, after the tracker may have applied the request."""


class NoReply(UnknownOutcome):
    """The caller gave up waiting for the reply: the request may have been applied, or may never arrive."""


class Failed(UnknownOutcome):
    """The receiver answered a failure (a 5xx): it may have made the effect before it failed, and what a retry
    under the same key gets is its profile's to say (`crashlab.profiles.Profile.after_failure`)."""


class Wire:
    """The direct path: send is the tracker's request, applied at once."""

    def __init__(self, tracker: TrackerProtocol):
        self.tracker = tracker

    def send(self, call: Call, args: dict[str, Any], key: str | None) -> int:
        return self.tracker.request(call, args, key)

    def layers(self) -> Iterator[Wire]:
        """This wire and every one it relays to, outermost first."""
        yield self

    def state(self) -> Any:
        """What is on this part of the wire when a process dies: nothing, on the direct path."""
        return ()

    def restore(self, state: Any) -> None:
        """Hold `state` again, as the world a restart finds."""

    def finish(self) -> None:
        """The run is over: its last process returned."""


class Relay(Wire):
    """A length of wire in front of another: a fault's, which sees each request before it goes on."""

    def __init__(self, inner: Wire):
        super().__init__(inner.tracker)
        self.inner = inner

    def send(self, call: Call, args: dict[str, Any], key: str | None) -> int:
        return self.inner.send(call, args, key)

    def layers(self) -> Iterator[Wire]:
        yield self
        yield from self.inner.layers()


class Nth(Relay):
    """A relay that acts on the `at`-th changing request of a scenario: it counts them over every process of the
    scenario, so its count is part of the world a death leaves (`state`, `restore`)."""

    def __init__(self, inner: Wire, at: int):
        super().__init__(inner)
        self.at = at
        self.sent = 0  # changing requests sent so far, over every process of the scenario

    def counted(self) -> bool:
        """Count one more request; whether it is the `at`-th."""
        self.sent += 1
        return self.sent == self.at

    def state(self) -> Any:
        return self.sent

    def restore(self, state: Any) -> None:
        self.sent = state
