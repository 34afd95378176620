"""`interleave`: a reply's parallel tool calls reach the world in another order.

A loop that runs its tool calls on threads is scheduled by the harness (`crashlab.protocols.schedule`):
one thread runs at a time, and at each crash point, task start and end, and wait on another thread,
a decision names which goes on. The plain sweep runs the default schedule (a thread goes on until it
blocks or ends, then the first by number). Under this fault, the sweep first searches the schedules
of the uninterrupted run for every order in which its calls can reach the world
(`crashlab.faults.orders`), and for each order the schedule of most calls in flight at once (each
thread hands over just after its request), then runs, each a tree of its own: the default schedule,
one schedule for each order the default does not reach, the schedule of most in flight of each
order, each of these (those of most in flight first: they leave a restart the most to do) with its
restarts running their threads in each other order, then the schedules that depart
from the default at one decision, in the order `schedules` gives (CHESS's: no preemption first),
with their restarts in the default order; up to `--interleavings` of them in all (`LIMIT` unless
told; ``all``: every one of these). The table says which orders it covered, of which it ran the
schedule of most in flight, and after how many schedules the restarts ran in each order.
What it does not run: the restarts in other orders after a schedule of one departure, and a
restart's own departures within an order (a restart hands over only where a thread blocks or ends).
Its value is the schedule: the option taken at each decision with several, from 1, dot-joined
(``langgraph-parallel+interleave=1.1.2:5``: the first process takes the second thread at its third
decision, and dies at its fifth crash point); then, after a dash, the threads every restart runs
first, by number, where its restarts do not run the default schedule (``=1-3.2.1``: the last task a
restart submits goes on while it can, then the one before). A restart's decisions depend on what
its state left it to do, so its schedule names threads, not options.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from itertools import chain, islice, permutations
from typing import TYPE_CHECKING, ClassVar

from crashlab.errors import BadInput
from crashlab.faults.orders import Ran, Schedule, crowded, normal, ran, said, search
from crashlab.protocols.fault import Capability, Fault, Faults, Rerunning, Serving, Swept
from crashlab.protocols.scenario import EFFECTS

if TYPE_CHECKING:
    from crashlab.protocols.scenario import ScenarioRun

#: How many schedules a sweep under the fault runs at most, the default's included, unless `--interleavings`
#: says otherwise. The table says how many it ran of how many there were.
LIMIT = 8
#: The most `--interleavings` takes (a tree each, and a sweep of more is a search, not a test), and the most
#: schedules the search for every order of the calls runs.
MOST = 10_000


@dataclass(frozen=True)
class Decision:
    """One decision of the default run: how many threads it chose from, whether taking another than the first
    preempts a thread at a crash point, and what two of those threads are seen to do in that run: 2 if two
    make requests (another order of the calls reaches the world), 1 if two pass crash points, else 0 (a
    departure between threads that do nothing the harness sees changes nothing it counts)."""

    options: int
    preempts: bool
    seen: int
    sleeps: bool = False  # taken as a thread sleeps (the story says so; the order does not depend on it)


def schedules(decisions: Sequence[Decision], limit: int | None = LIMIT) -> tuple[list[tuple[int, ...]], int]:
    """The schedules one departure from the default makes, the default first, up to `limit`, and how many
    there are. As CHESS orders them, the departures that preempt no thread (another task begins when one
    blocks or ends) come before those that preempt one; among each, those between threads seen to do
    more come first (`Decision.seen`); and then the order of the run."""
    departures = sorted(((d.preempts, -d.seen, k, pick) for k, d in enumerate(decisions)
                         for pick in range(2, d.options + 1)))
    found = [(1,), *((1,) * k + (pick,) for *_, k, pick in departures)]
    return found[:limit], len(found)


def decisions_of(run: ScenarioRun) -> list[Decision]:
    """The decisions of `run`'s first process, as `schedules` takes them: which thread did what is read from the
    story, where each change of thread is noted."""
    events = [e for e in run.points.events if e.process == 1]
    requests: set[int] = set()
    points: set[int] = set()
    thread = 0
    for e in events:
        if e.kind == "schedule":
            thread = int(e.detail["thread"])
        elif e.kind == "point":
            points.add(thread)
        elif e.kind in EFFECTS:
            requests.add(thread)
    decisions = []
    for e in events:
        if e.kind == "schedule" and int(e.detail["options"]) > 1:
            threads = set(e.detail["threads"])
            seen = 2 if len(requests & threads) > 1 else 1 if len(points & threads) > 1 else 0
            decisions.append(Decision(int(e.detail["options"]), bool(e.detail["preempts"]), seen,
                                      bool(e.detail.get("sleeps"))))
    return decisions


@dataclass(frozen=True)
class Interleave(Fault):
    #: The most schedules a sweep under it runs (None: every one): a bound on the search, not part of any ID.
    limit: int | None = field(default=LIMIT, compare=False)
    #: A schedule of a sweep's: the order its calls reach the world in, and every order the search found.
    reaches: str = field(default="", compare=False)
    orders: tuple[str, ...] = field(default=(), compare=False)
    #: ... and the order in which its restarts run their threads first (by number), and every such order.
    restart: str = field(default="", compare=False)
    restarts: tuple[str, ...] = field(default=(), compare=False)
    #: ... and the orders whose schedule of most calls in flight its first process runs.
    crowds: tuple[str, ...] = field(default=(), compare=False)
    #: ... and whether its first process runs a schedule of an order (after which its restarts run in each order),
    #: how many such schedules there are, and how many schedules in all.
    paired: bool = field(default=False, compare=False)
    after: int = field(default=0, compare=False)
    there: int = field(default=0, compare=False)

    slug = "interleave"
    breaks = "the threads a loop runs its tool calls on take turns in another order, decided at each crash point"
    adds = ("the default schedule, a schedule for each other order in which the calls can reach the world, one "
            "with most calls in flight at once for each order, each of those with its restarts running their threads "
            f"in each other order, and each schedule that departs from the default at one decision, up to {LIMIT} or "
            "--interleavings in all (ID SLUG+interleave=P.Q.R:I, each the thread taken at a decision; =1-3.2.1: the "
            "threads a restart runs first)")
    needs: ClassVar[frozenset[Capability]] = frozenset()
    in_matrix: ClassVar[bool] = False
    schedules_threads: ClassVar[bool] = True

    @classmethod
    def configured(cls, value: str | None = None) -> Fault:
        """Every schedule in turn, in a sweep; the one `value` names, in a scenario's ID."""
        picks, dash, first = (value or "").partition("-")
        parts, firsts = picks.split(".") if picks else [], first.split(".") if first else []
        if not all(p.isascii() and p.isdigit() and int(p) > 0 and len(p) < 4 for p in (*parts, *firsts)) or \
                len(parts) > 10_000 or (dash and not firsts) or len(set(firsts)) < len(firsts):
            raise BadInput(f"+interleave={value}: a schedule is the option taken at each decision, from 1, "
                           "dot-joined (=1, =1.2, ...), and after a dash the threads a restart runs first, each once "
                           "(=1.2-3.2.1)")
        while len(parts) > 1 and parts[-1] == "1":
            parts.pop()
        return cls(".".join(parts or (["1"] if firsts else [])) + (f"-{'.'.join(firsts)}" if firsts else ""))

    def schedule(self, process: int) -> tuple[tuple[int, ...], tuple[int, ...]]:
        """The first process's picks; a restart's threads that go first."""
        picks, _, first = self.value.partition("-")
        if process == 1:
            return tuple(int(p) for p in picks.split(".") if p), ()
        return (), tuple(int(t) for t in first.split(".") if t)

    def variations(self, without: Rerunning) -> Iterable[Fault]:
        """The default schedule, one for each order of the calls it does not reach, one of most calls in flight for
        each order, each of these with its restarts running their threads in each other order, then each of one
        departure, up to the bound; each knows what it covers of what there is."""
        setup = without.setup
        if not setup.variant.scheduled:
            raise BadInput(f"--fault interleave orders the threads of a loop that runs its tool calls on a thread "
                           f"pool, and {setup.variant.slug}'s threads are not scheduled")
        # The service names a request by its title or query: the order names it by its call, or its effect.
        names = {repr(value): call.id for call in setup.job.calls for name, value in call.args.items()
                 if name in ("title", "query")}
        names.update({repr(e.title): e.name for e in setup.variant.service if e.title is not None})
        shown: dict[Schedule, Ran] = {}

        def run(schedule: Schedule) -> Ran:
            if schedule not in shown:
                done = without.rerun(Faults.of([Interleave(dotted(schedule))])) if schedule else without.first
                shown[schedule] = ran(done.points.events, EFFECTS, names)
            return shown[schedule]

        orders = search(run, MOST).orders
        crowds: dict[Schedule, list[str]] = {}
        for order, schedule in orders.items():
            crowds.setdefault(crowded(run, schedule, run(schedule)), []).append(said(order))
        # A restart that resumes the reply numbers its tasks from 1: it runs them in each order of the most tasks
        # the first process could choose among at once, after the deaths of each schedule of an order, those of
        # most in flight first (they leave a restart the most to do).
        tasks = list(range(1, 1 + max((len(set(threads) - {0}) for threads in run(()).options), default=0)))
        firsts = [order for order in islice(permutations(tasks), MOST) if list(order) != tasks]
        restarted = list(dict.fromkeys([*crowds, *orders.values()]))
        one, _ = schedules(decisions_of(without.first), None)
        alone = list(dict.fromkeys([(), *orders.values(), *crowds]))
        departing = [s for s in dict.fromkeys(normal(s) for s in one) if s not in alone]
        there = len(alone) + len(restarted) * len(firsts) + len(departing)
        chosen = list(islice(chain(((s, ()) for s in alone), ((s, f) for s in restarted for f in firsts),
                                   ((s, ()) for s in departing)), self.limit))
        told = tuple(said(order) for order in orders)
        restarts = tuple(said(tuple(map(str, order))) for order in (tasks, *firsts)) if tasks else ()
        return [Interleave(dotted(s) + (f"-{'.'.join(map(str, f))}" if f else ""), self.limit, said(run(s).order),
                           told, said(tuple(map(str, f or tasks))), restarts, tuple(crowds.get(s, ())),
                           s in restarted, len(restarted), there) for s, f in chosen]

    def explored(self, sweep: Swept) -> str:
        """Which orders of the calls the sweep's schedules reached, of every order the search found; of which it ran
        the schedule of most calls in flight; and in which orders its restarts ran their threads after the deaths
        of those schedules, of every order of them."""
        if self.value:
            return f"={self.value}"
        ran = [f for tree in sweep.trees for f in tree.faults.members if isinstance(f, Interleave)]
        every, reached, crowded = ran[0].orders, {f.reaches for f in ran}, {o for f in ran for o in f.crowds}
        restarts, after, paired = ran[0].restarts, ran[0].after, sum(f.paired for f in ran)
        not_covered = [order for order in every if order not in reached]
        not_crowded = [order for order in every if order not in crowded]
        whole, pairs = f"{len(every)} of {len(every)}", after * len(restarts)
        orders = f"orders not covered: {', '.join(not_covered)}" if not_covered else f"{whole} orders"
        in_flight = f"not in flight: {', '.join(not_crowded)}" if not_crowded else f"{whole} in flight"
        restarting = [] if len(restarts) < 2 else \
            [f"restarts in {len(restarts)} of {len(restarts)} after each of {after}"] if paired == pairs else \
            [f"restarts in {len(restarts)} orders after {after} schedules: {paired} of {pairs} run"]
        if not_covered or not_crowded or paired < pairs:
            return f"{len(ran)} schedules, bounded at {self.limit}: " + "; ".join([orders, in_flight, *restarting])
        count = f"{len(ran)} of {ran[0].there}" if len(ran) < ran[0].there else f"{len(ran)}"
        return ", ".join([orders, in_flight, *restarting, f"{count} schedules"])

    def serve(self, serving: Serving) -> Serving:
        return serving


def dotted(schedule: Schedule) -> str:
    """A schedule as its fault's value names it: the default is ``1``."""
    return ".".join(map(str, schedule or (1,)))


def bounded(faults: Faults, limit: int | None) -> Faults:
    """`faults`, their interleave fault running at most `limit` schedules, or every one (`--interleavings`)."""
    if not any(isinstance(f, Interleave) for f in faults.members):
        raise BadInput("--interleavings bounds the schedules of --fault interleave: it needs --fault interleave")
    return Faults.of(replace(f, limit=limit) if isinstance(f, Interleave) else f for f in faults.members)
