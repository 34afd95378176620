"""Two deaths counted as one, checked before a sweep trusts it.

A shared sweep restarts once from each distinct durable state and counts that restart for every death
that left a state equal to it. Equal is decided by the states' content (`crashlab.durable.content`),
which leaves out what no restart is meant to read: how a database lays out its pages, a file's
modification time, what a runtime declares volatile. A loop that reads one of these after all has two
futures where the sweep counts one, and the sweep counts the first for both. So before a tree grows,
the sweep restarts from states it counts as one, where it costs least: among the states the deaths of
the uninterrupted run leave, the first `CLASSES` classes of equal states (in the order of their first
point) whose first and last members' copies differ at all, each by those two members. The two restarts
must do the same: pass the same points, send the same requests, leave the same world. A loop whose two
do otherwise is refused, with what each did and how the two states differ.

What it cannot see: a class beyond the first `CLASSES`, and classes of the states that restarts' deaths
leave (at depth 2 and deeper), whose members are only known as the tree grows; a loop that reads what
the content leaves out only there is counted as the content says. Each check costs two restarts.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from crashlab.engine.tree import Trunk
from crashlab.errors import BadInput
from crashlab.protocols.death import Left
from crashlab.protocols.scenario import ScenarioRun, departure

if TYPE_CHECKING:
    from crashlab.protocols.runner import Runner

#: What a refusal tells the user of a loop that is not theirs (a runtime's) to do instead.
UNSHARED = "sweep it with --no-share, which re-executes every scenario"
#: How many classes of equal states the check restarts from, two restarts each.
CLASSES = 2


def merged(stem: Trunk) -> list[tuple[tuple[int, Left], tuple[int, Left]]]:
    """The pairs the check restarts from: of each of the first `CLASSES` classes of the first deaths' states that
    are equal, but whose first and last members' copies are not, those two, each with the point it died at."""
    classes: dict[bytes, list[tuple[int, Left]]] = {}
    for branch in stem.branches:
        for left in branch.group:
            if left.state is not None:
                classes.setdefault(left.state.fingerprint(), []).append((branch.crash, left))
    pairs = [(members[0], members[-1]) for members in classes.values()
             if members[0][1].durable.unlike(members[-1][1].durable)]
    return pairs[:CLASSES]


def check_merges(stem: Trunk, runner: Runner, instead: str) -> None:
    """Refuse `stem`'s loop (`BadInput`, saying `instead` what to do) if, restarted from two states the sweep counts
    as one, it does two different things."""
    setup, calls = stem.setup, stem.run.world.model.calls
    for (i, one), (j, other) in merged(stem):
        first = runner.life(setup, one, (i,), (one.choice,), watch=False)
        second = runner.life(setup, other, (j,), (other.choice,), watch=False)
        differs = _difference(first, second, i, j)
        if differs is None and first.outcome(calls) != second.outcome(calls):
            differs = f"the restart after the death at its point {j} left another world than the one after {i}"
        if differs is not None:
            raise BadInput(f"{setup.variant.slug}: the deaths at its points {i} and {j} leave states a shared sweep "
                           f"counts as one, but {differs}; the states differ in "
                           f"{one.durable.unlike(other.durable)}; {instead}")


def _difference(first: ScenarioRun, second: ScenarioRun, i: int, j: int) -> str | None:
    """How the two restarts differ in what they did, if they do."""
    ours, theirs = first.trace(first.points.process), second.trace(second.points.process)
    if (said := departure(theirs, ours, f"the restart after the death at its point {i}")) is not None:
        return f"the restart after the death at its point {j} {said}"
    if (said := departure(ours, theirs, f"the restart after the death at its point {j}")) is not None:
        return f"the restart after the death at its point {i} {said}"
    return None
