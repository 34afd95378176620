"""The orders in which a loop's parallel calls reach the world, and a search that finds a schedule for each.

A schedule (`crashlab.protocols.schedule`) is the option taken at each decision of a run; the run
it makes shows which thread made each request, and which threads each decision could have chosen.
Two requests of different threads are the only steps here that depend on one another: whichever
reaches the world first is what the other finds there. So, as DPOR does (Flanagan and Godefroid,
*Dynamic partial-order reduction for model checking software*, 2005), the search runs a schedule,
and for each request that came before another thread's, it backtracks to the last decision before
it at which the other thread could have gone instead, and tries that: from there the other thread
goes on by the default (a thread that yields at a point goes on), and makes its request first. Each
schedule it tries is run once and read the same way, until no backtrack is new.

Every order of the requests is then reached, as far as the threads meet only at the requests and
the waits the scheduler sees. An order does not tell every state, though: in the schedule that
reaches ABC, A may have saved its result before B makes its request, and a death after all three
requests with none of their results saved (the restart makes all three again) needs two more
departures. So for each order `crowded` makes the schedule of the most requests in flight at once:
each thread that makes a request hands over, at the first decision after it where it can, to the
thread of the next request, so that none goes on to save its result while a later request is still
to be made; after the last request the default goes on. Killed at each point, that schedule leaves
the first one, two, ... requests of the order in flight at once, none answered into the loop's
state. Not every subset: that C is saved while A and B are still in flight, with C's request last,
is reached only as the defaults after the last request, or a departure of
`crashlab.faults.interleave.schedules`, happen to reach it. And where the next thread cannot go on
just after a request (it waits on something), the handover is at the first decision where it can:
by then the thread before may have saved its result.

What it cannot see: two threads that read and write something of the process's own (a dict, a file
in the run directory) between points, where the order of those writes changes which requests a
thread makes. Orders of such writes are explored only as the requests' orders and the departures of
`crashlab.faults.interleave.schedules` happen to reach them.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from itertools import pairwise

from crashlab.errors import BadInput
from crashlab.protocols.points import Event

#: An order: the calls of a run's first process, each where it first reached the world.
Order = tuple[str, ...]
Schedule = tuple[int, ...]


@dataclass(frozen=True)
class Ran:
    """What one run of a schedule showed: the option taken at each decision, the threads it chose among, and
    each request's thread and call, with how many decisions came before it."""

    picks: Schedule
    options: tuple[tuple[int, ...], ...]
    requests: tuple[tuple[int, int, str], ...]  # (decisions before it, thread, call)

    @property
    def order(self) -> Order:
        calls: dict[str, None] = {}
        for _, _, call in self.requests:
            calls.setdefault(call, None)
        return tuple(calls)


def ran(events: Iterable[Event], requests: Iterable[str], names: Mapping[str, str] | None = None) -> Ran:
    """The first process's decisions and requests among `events`: each event is the thread's that last took the
    baton (the story notes every change); a request is an event of a kind in `requests`, named by its call
    (`names` renames a call, as a loop of yours's effects name its issues)."""
    kinds, names = frozenset(requests), names or {}
    picks: list[int] = []
    options: list[tuple[int, ...]] = []
    made: list[tuple[int, int, str]] = []
    thread = 0
    for e in events:
        if e.process != 1:
            continue
        if e.kind == "schedule":
            thread = int(e.detail["thread"])
            if int(e.detail["options"]) > 1:
                picks.append(int(e.detail["chose"]))
                options.append(tuple(e.detail["threads"]))
        elif e.kind in kinds:
            call = str(e.detail.get("call", e.label))
            made.append((len(picks), thread, names.get(call, call)))
    return Ran(tuple(picks), tuple(options), tuple(made))


def normal(schedule: Iterable[int]) -> Schedule:
    """A schedule without its trailing defaults: ``1.2.1`` runs as ``1.2`` does."""
    picks = list(schedule)
    while picks and picks[-1] == 1:
        picks.pop()
    return tuple(picks)


def departures(schedule: Schedule) -> int:
    """How many decisions a schedule takes otherwise than the default."""
    return sum(pick != 1 for pick in schedule)


def backtracks(run: Ran) -> set[Schedule]:
    """The schedules that let a thread make its request before an earlier request of another thread: at the last
    decision before the earlier request where the later thread could go on and did not, it goes on."""
    found = set()
    for k, (before, first, _) in enumerate(run.requests):
        for _, other, _ in run.requests[k + 1:]:
            if other == first:
                continue
            for d in range(before - 1, -1, -1):
                threads = run.options[d]
                if other in threads and threads[run.picks[d] - 1] != other:
                    found.add(normal((*run.picks[:d], threads.index(other) + 1)))
                    break
    return found


@dataclass(frozen=True)
class Search:
    """Every schedule the search ran, with the order each reached; the first schedule found for each order."""

    ran: dict[Schedule, Order]

    @property
    def orders(self) -> dict[Order, Schedule]:
        """Each order reached, with the schedule of fewest departures that reached it (the first found)."""
        found: dict[Order, Schedule] = {}
        for schedule, order in self.ran.items():
            found.setdefault(order, schedule)
        return found


def search(run: Callable[[Schedule], Ran], most: int) -> Search:
    """Run the default schedule, then every backtrack of every run, those of fewest departures first, until none
    is new: more than `most` runs is refused in one line (the orders of that many calls are a search, not a test)."""
    ran: dict[Schedule, Order] = {}
    waiting: list[tuple[int, int, Schedule]] = [(0, 0, ())]
    queued: set[Schedule] = {()}
    while waiting:
        *_, schedule = heapq.heappop(waiting)
        if len(ran) == most:
            raise BadInput(f"--fault interleave: the search for every order of the calls ran {most:,} schedules and "
                           "found more to try: too many calls at once to try every order")
        shown = run(schedule)
        ran[schedule] = shown.order
        for other in backtracks(shown) - queued:
            queued.add(other)
            heapq.heappush(waiting, (departures(other), len(other), other))
    return Search(ran)


def handover(run: Ran) -> Schedule | None:
    """The first handover `run` does not make: after a request, at the first decision before the next request
    (of another thread) that could give that thread the baton, it takes it; None if `run` makes every one."""
    for (before, thread, _), (after, other, _) in pairwise(run.requests):
        if other == thread:
            continue
        for d in range(before, after):
            threads = run.options[d]
            if other in threads:
                if threads[run.picks[d] - 1] != other:
                    return normal((*run.picks[:d], threads.index(other) + 1))
                break
    return None


def crowded(run: Callable[[Schedule], Ran], schedule: Schedule, shown: Ran) -> Schedule:
    """The schedule of most requests in flight at once from `schedule` (which `shown` ran): it makes each handover
    in turn, and runs it. Each keeps the decisions before its own, so each is later than the one before, and the
    search ends; the order is the same unless a thread handed the baton makes another request first."""
    while (handed := handover(shown)) is not None:
        schedule, shown = handed, run(handed)
    return schedule


def said(order: Order) -> str:
    """An order as a table says it: ``BCA`` where every call is named by one character, else ``S1 A B``."""
    return "".join(order) if all(len(call) == 1 for call in order) else " ".join(order)
