"""A loop's word that it keeps all it keeps in its run directory, checked before a sweep trusts it.

A sweep of real processes restarts each from a copy of the run directory, taken with the process
stopped where its death would be (`crashlab.runners.forked`). That copy is what the death leaves only
if the directory is all the loop keeps. A loop that also keeps state elsewhere (a file at a fixed
path, a database named after its run, another process's memory) restarts from the copy with that
state as some other process left it, or without it, and the sweep would count what no death leaves.
crashlab's own loops and the runtimes are held to it by their tests; a loop of yours is taken at its
word (`--state-in-run-dir`) only once it passes this check, on every sweep: at the first, the middle
and the last crash point of its uninterrupted run, its restart from a copy, in a directory of its
own, must do what its restart after a real death there does, request for request, and leave the
same world. A loop that fails is refused; one that passes may still keep, elsewhere, something
that these three deaths do not show.

The check runs as the branches of those three points grow (`Branch.checks`), on the sweep's workers, rather
than before the tree grows on one: each point's check is three processes of a program that may take most of
a second to start, nine in all, and on two workers the second sat idle while the first ran them; and the
restart from the copy is the one the branch grows first (three of the nine).
"""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING

from crashlab.errors import BadInput, Flaky
from crashlab.protocols.death import Left
from crashlab.protocols.outcome import Outcome
from crashlab.protocols.scenario import ScenarioRun, Setup, Trace, departure, trace_of

if TYPE_CHECKING:
    from crashlab.protocols.runner import Runner

#: What a refusal tells the user to do instead.
INSTEAD = "sweep it without --state-in-run-dir, which re-executes every scenario"


def checked(points: int) -> list[int]:
    """The crash points checked of an uninterrupted run that passes `points`: its first, middle and last."""
    return sorted({1, (points + 1) // 2, points}) if points else []


#: How many times more a check that found a difference restarts from the copy, and after the death, to tell a loop
#: that keeps state elsewhere (each side repeats itself, and the two differ) from one that does not repeat itself.
AGAIN = 6


def check_copy(setup: Setup, j: int, left: Left, copied: ScenarioRun, runner: Runner, calls: int) -> None:
    """Refuse `setup`'s loop unless `copied`, the restart from a copy of what its death at point `j` left (`left`),
    does what the restart after the death itself does (`BadInput`, naming the point and the difference); `calls`,
    the model calls of its uninterrupted run.

    A loop that does not repeat itself (a race) differs there too, by chance: where the two differ, each is run
    again, `AGAIN` times; a run that differs from its own side's first, or does what the other side's did, says
    that the loop does not repeat itself, and it is flaky (`Flaky`), not refused for keeping state elsewhere."""
    copy = partial(runner.life, setup, left, (j,), (left.choice,), watch=False)
    death = partial(runner.scenario, setup, (j,), (left.choice,))
    died = death()
    differs = _difference(copied, died)
    if differs is None and copied.outcome(calls) != died.outcome(calls):
        differs = ("the restart from a copy of its directory left another world than the restart in the "
                   "directory the death left")
    if differs is None:
        return
    ours, theirs = _did(copy(), calls), _did(died, calls)  # `copied` was watched for its forks: this one is not
    for _ in range(AGAIN):
        if (_did(copy(), calls), _did(death(), calls)) != (ours, theirs):
            raise Flaky(f"{setup.variant.slug} is flaky, it does not repeat itself: restarted again after a "
                        f"death at its point {j}, from the same state, it did otherwise ({differs}), so no copy "
                        "of its state can be held to its death, and no count of it is the loop's; sweep it with "
                        "--no-share --repeat N, which counts each scenario at the worst it came to")
    raise BadInput(f"--state-in-run-dir: {setup.variant.slug} keeps state outside its run directory: restarted "
                   f"after a death at its point {j}, {differs}; {INSTEAD}")


def _did(run: ScenarioRun, calls: int) -> tuple[Trace, Outcome]:
    """What a scenario's last process did, its keys named by their first use in it, and what the scenario came to."""
    restart = run.points.process
    return trace_of([e for e in run.points.events if e.process == restart], restart), run.outcome(calls)


def _difference(copied: ScenarioRun, died: ScenarioRun) -> str | None:
    """How the restart from the copy and the restart after the death differ, if they do. Each restart's keys
    are named by their first use in it: the copy's restart never saw the first process's."""
    restart = died.points.process
    theirs = trace_of([e for e in died.points.events if e.process == restart], restart)
    ours = copied.trace(copied.points.process)
    if (said := departure(ours, theirs, "the restart in the directory the death left")) is not None:
        return f"the restart from a copy of its directory {said}"
    if (said := departure(theirs, ours, "the restart from a copy of its directory")) is not None:
        return f"the restart in the directory the death left {said}"
    return None
