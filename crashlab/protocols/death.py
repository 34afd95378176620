"""What a death leaves: the states a restart can start from, each a value, and how it came to be.

A crash leaves exactly what was durable where the process died. A fault can make one death leave
several states (a power cut, every disk state its syncs allow; a restart, after each downtime):
each is a scenario of its own, named by its choice, one number per fault that chooses.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from crashlab.durable.state import Durable
from crashlab.durable.store import Store
from crashlab.errors import BadInput
from crashlab.protocols.points import Recorder
from crashlab.world import World

#: Which state a death left: one number (from 1) per fault that chooses, in the order the faults are named.
Choice = tuple[int, ...]


@dataclass(frozen=True)
class Left:
    """One state a death can leave: what a restart starts from, and how it came to be."""

    state: Durable | None  # None where the runner took no snapshot: the scenario is re-executed instead
    what: str = ""  # as people read it: "the power cut left the checkpoint of save 3, torn"
    choice: Choice = ()
    #: Whether the state differs from what the dying process held, so a restart must be built from it
    #: (a crash alone leaves the world and the store as they are).
    rebuild: bool = False
    #: A choice that names a point of the restart (where a request in flight lands): a restart that
    #: passes fewer points than this makes it the last choice of its kind.
    at_point: int = 0

    @property
    def durable(self) -> Durable:
        """The state, where the runner keeps one (every runner a fault that changes it runs on does)."""
        assert self.state is not None, "a fault changed a state the runner does not keep"
        return self.state

    def then(self, what: str, choice: int | None = None, state: Durable | None = None, at_point: int = 0) -> Left:
        """This state, changed further by one more fault: its `choice` among those the fault allows (None
        for a fault that leaves one), the `state` it leaves, and how it came to be."""
        return Left(state or self.state, f"{self.what}; {what}" if self.what and what else self.what or what,
                    self.choice if choice is None else (*self.choice, choice), rebuild=True,
                    at_point=at_point or self.at_point)


class NoSuchChoice(BadInput):
    """A scenario names a state (a disk state, a downtime, a landing) that its death does not allow."""


@dataclass
class Death:
    """Where a process dies: the world and the store it leaves behind, and its recorder."""

    world: World
    store: Store
    points: Recorder

    def crash(self) -> Left:
        """What a SIGKILL here leaves: everything durable, as it is."""
        return Left(Durable.of(self.world, self.store))


def chosen(groups: Iterable[Iterable[Left]], choice: Choice, points: Recorder) -> Left:
    """The state `choice` names among those a death leaves (a crash's, when no fault chooses)."""
    found: list[Choice] = []
    for group in groups:
        for left in group:
            if left.choice == choice:
                return left
            found.append(left.choice)
            if left.at_point and (left.choice[:-1] != choice[:-1] or left.choice[-1] >= choice[-1]):
                break  # a group whose choices name the restart's points, and not the one named
    dead = points.dead
    where = f"process {points.process}'s point {dead.index}" if dead else f"process {points.process}"
    if not found:
        raise NoSuchChoice(f"{points.scenario}: the death at {where} leaves no state these faults choose from")
    shown = ", ".join("~" + ".".join(map(str, c)) for c in found)
    raise NoSuchChoice(f"{points.scenario}: the death at {where} leaves {len(found)} states ({shown})")
