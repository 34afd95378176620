"""The sweep: crash a loop at every point it reaches, and at every point its restart reaches too.

A sweep is a tree of lives rooted in the uninterrupted run: the life after a crash at point j of
its parent is the restart from what that death left. Shared, the tree grows from snapshots (each
restart starts from the durable state its crash left, and equal states share one life); replayed,
every scenario is re-executed from nothing, the oracle sharing must equal. Each first crash's
subtree is a `Branch`, a plain value that can grow in another process or on another machine.
Every count is read from the world after a scenario has run; nothing is computed by formula.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from functools import partial
from itertools import zip_longest
from operator import attrgetter
from typing import TYPE_CHECKING

import msgspec

from crashlab.engine.copies import check_copy
from crashlab.errors import Stray
from crashlab.protocols.death import Choice, Left, NoSuchChoice
from crashlab.protocols.fault import Faults
from crashlab.protocols.outcome import COUNT_HEADS, COUNT_KEYS, Counts, Failure, Outcome, failure, flaky_outcome
from crashlab.protocols.points import named
from crashlab.protocols.scenario import (
    ScenarioResult,
    ScenarioRun,
    Setup,
    Trace,
    check_once,
    check_retrace,
    profile_tag,
    scenario_id,
)

if TYPE_CHECKING:
    from crashlab.protocols.runner import Runner

Advance = Callable[[int], None]


#: The depth under which a shared sweep's memo keeps, for each state, its process's life with no death after it.
LEAF = 0


def _ignore(n: int) -> None:
    pass


@dataclass(frozen=True)
class Tally(Counts):
    """Sums over a set of scenarios: what a row shows, and the crash-point hits and saves they took."""

    by_depth: tuple[int, ...] = ()  # scenarios by number of crashes: one crash first
    uncrashed: int = 0  # scenarios with no crash at all (a fault that breaks something without one)
    hits: int = 0
    saves: int = 0

    @classmethod
    def one(cls, outcome: Outcome, hits: int, saves: int, crashes: int = 1) -> Tally:
        """One scenario of `crashes` crashes, counted as the row counts it."""
        depths = (0,) * (crashes - 1) + (1,) if crashes else ()
        return cls(*_counts(Counts.of(outcome)), depths, int(not crashes), hits, saves)  # type: ignore[call-arg]

    @property
    def scenarios(self) -> int:
        return sum(self.by_depth) + self.uncrashed

    def __add__(self, other: Tally) -> Tally:
        depths = tuple(map(sum, zip_longest(self.by_depth, other.by_depth, fillvalue=0)))
        counts = list(map(int.__add__, _counts(self), _counts(other)))
        return Tally(*counts, depths, *map(int.__add__, _own(self), _own(other)))  # type: ignore[arg-type, call-arg]

    def behind(self, hits: int, saves: int) -> Tally:
        """These scenarios, each behind one more crash, of a process that took `hits` points and `saves` saves."""
        n = self.scenarios
        return Tally(*_counts(self), (self.uncrashed, *self.by_depth), 0, self.hits + n * hits,  # type: ignore[call-arg]
                     self.saves + n * saves)


#: A tally's counts, in field order, and its own sums after them: read at speed, as the tree adds tallies up.
_counts = attrgetter(*COUNT_KEYS)
_own = attrgetter("uncrashed", "hits", "saves")


@dataclass(frozen=True, eq=False)
class Life:
    """One process's life, from the state its predecessor's death left to the finished run.

    A life is also a scenario: the one whose crashes led to it, and which ends when it finishes.
    `after[c]` is the life that follows its crash `forks[c]`, a crash at its j-th point that left the
    state its faults' `choice` names, for as long as the sweep's depth allows. When equal states
    share one life, the tree is a DAG; every path through it is still a scenario of its own.
    """

    state: bytes  # the fingerprint of the durable state it started from; b"" for the first process
    #: A digest of what it and every life after it came to, as the scenarios' results say it (`future`): the same
    #: however the sweep ran, shared or re-executed, here or on a worker.
    future: bytes
    outcome: Outcome
    hits: int  # crash points it passed
    saves: int  # saves it began
    labels: tuple[str, ...]  # its crash points, in order
    saves_by: tuple[int, ...]  # saves begun up to each of its points, that point's own included
    forks: tuple[tuple[int, Choice], ...]  # (point, choice) of each crash that `after` follows
    after: tuple[Life, ...]
    below: Tally  # every scenario that crashes this life, and the lives after it
    tally: Tally  # this life's own scenario, and every one below it
    repeated: bool = False  # shared: its restart ran twice, from one copy, to see that it repeats (`REPEATED`)


def life_of(run: ScenarioRun | None, state: bytes, baseline_calls: int, after: Sequence[Life] = (),
            forks: Sequence[tuple[int, Choice]] = (), outcome: Outcome | None = None, repeated: bool = False) -> Life:
    """The last process of `run` as a life, with the lives its crashes lead to; `outcome` in place of the
    run's own for a flaky scenario (with `run` None where no repeat of it ran whole)."""
    if run is None:
        assert outcome is not None, "a life that never ran has the outcome it was given"
        return Life(state, future(outcome, 0, 0, ()), outcome, 0, 0, (), (), (), (), Tally(), Tally.one(outcome, 0, 0),
                    repeated)
    process, labels, saves_by, saves = run.points.process, [], [], 0
    for e in run.points.events:
        if e.process != process:
            continue
        if e.kind == "save":
            saves += 1
        elif e.kind == "point":
            labels.append(e.label)
            saves_by.append(saves)
    below = sum((life.tally.behind(j, saves_by[j - 1]) for (j, _), life in zip(forks, after, strict=True)), Tally())
    outcome = outcome or run.outcome(baseline_calls)
    tally = Tally.one(outcome, len(labels), saves) + below
    names = named(labels)
    ahead = [(j, names[j - 1], saves_by[j - 1], choice, life.future)
             for (j, choice), life in zip(forks, after, strict=True)]
    return Life(state, future(outcome, len(labels), saves, ahead), outcome, len(labels), saves, tuple(labels),
                tuple(saves_by), tuple(forks), tuple(after), below, tally, repeated)


_canonical = msgspec.msgpack.Encoder(order="sorted")


def future(outcome: Outcome, hits: int, saves: int, ahead: Sequence[tuple[int, str, int, Choice, bytes]]) -> bytes:
    """A life's future: its outcome, the points and saves it passed, and at each crash that the sweep follows, the
    point (its index and label#occurrence), the saves before it, the state it left as its faults chose it, and the
    future of the life after it: all that the scenarios' results hold of it and of the lives below it, and nothing
    of its files. Two lives from equal states have one future; so do two from states that differ only in what no
    restart acts on (an ID a run drew, a page a commit raced with)."""
    return hashlib.blake2b(_canonical.encode((outcome, hits, saves, ahead)), digest_size=16).digest()


def deaths(groups: Iterable[Iterable[Left]], grow: Callable[[Left], Life]) -> Iterator[tuple[Choice, Life]]:
    """Grow a life for each state a death can leave, group by group: a group whose choices name points
    of the restart ends with the first restart that passes fewer points than its choice names."""
    for group in groups:
        for left in group:
            life = grow(left)
            yield left.choice, life
            if left.at_point and life.hits < left.at_point:
                break


def after(run: ScenarioRun, grow: Callable[[int, Left], Life]) -> tuple[list[Life], list[tuple[int, Choice]]]:
    """The lives after each death `run`'s last process could die, at each of its points: its forks."""
    lives, forks = [], []
    for j, groups in enumerate(run.deaths or (), start=1):
        for choice, life in deaths(groups, partial(grow, j)):
            lives.append(life)
            forks.append((j, choice))
    return lives, forks


@dataclass(frozen=True)
class Branch:
    """The subtree of one first crash: every state its death can leave, and the lives after each.

    A plain value, so it can grow in another process: shared, from the states in `group`; replayed,
    re-executing each scenario and checking that its first process retraces `traces[0]`.
    """

    setup: Setup
    depth: int
    baseline_calls: int
    crash: int
    group: Iterable[Left]
    traces: tuple[Trace, ...]  # replayed: what each process before the last retraces
    share: bool = True
    repeat: int = 1  # replayed: how many times each scenario runs, to find it flaky
    strays_fail: bool = True  # whether a process that strays fails the sweep, or makes its scenario flaky
    checks: bool = False  # shared: first, that a restart from a copy of its state does what one after its death does

    def grow(self, runner: Runner, advance: Advance = _ignore, memo: dict | None = None) -> list[tuple[Choice, Life]]:
        """The lives after this crash, one per state it can leave; `memo` may be shared with other branches. A branch
        that `checks` refuses its loop (`crashlab.engine.copies`) before it grows, and the check's restart from a
        copy of its first state is the first life it grows."""
        memo = {} if memo is None else memo
        copied = None
        if self.share and self.checks:
            first = next(iter(self.group))
            copied = runner.life(self.setup, first, (self.crash,), (first.choice,), watch=self.depth > 1)
            check_copy(self.setup, self.crash, first, copied, runner, self.baseline_calls)

        def grow(left: Left) -> Life:
            nonlocal copied
            if self.share:
                ran, copied = copied, None
                return self._shared(runner, left, (self.crash,), (left.choice,), advance, memo, ran)
            return self._replayed(runner, (self.crash,), (left.choice,), list(self.traces), advance)

        return list(deaths([self.group], grow))

    def _shared(self, runner: Runner, start: Left, crashes: tuple[int, ...], choices: tuple[Choice, ...],
                advance: Advance, memo: dict[tuple[bytes, int], Life], ran: ScenarioRun | None = None) -> Life:
        """The life after `crashes`, from the state `start` holds (`ran`: its process, if one has run already).

        A life is one per (state, depth), for below the sweep's depth its forks differ with the depth; but a process
        is one per state where it can be: a restart at the sweep's depth, which no death follows, is the process an
        earlier restart from the same state ran (its first point often leaves the state it started from), under
        `(state, LEAF)`, kept before that restart's forks grow."""
        assert start.state is not None
        state = start.state.fingerprint()
        key, leaf = (state, len(crashes)), len(crashes) == self.depth
        if (known := memo.get(key) or (memo.get((state, LEAF)) if leaf else None)) is not None:
            advance(known.tally.scenarios)
            return known
        run = ran or runner.life(self.setup, start, crashes, choices, watch=not leaf)
        advance(1)
        repeated = len(crashes) <= REPEATED
        if repeated:
            again = runner.life(self.setup, start, crashes, choices, watch=False)
            outcomes = [run.outcome(self.baseline_calls), again.outcome(self.baseline_calls)]
            if outcomes[0] != outcomes[1] or run.trace(run.points.process) != again.trace(again.points.process):
                # Two restarts from one copy differ: the loop does not repeat itself, and this scenario counts the
                # worst it came to; what follows a death in it is no one run's to explore (as re-executed).
                memo[key] = life = life_of(run, state, self.baseline_calls, outcome=flaky_outcome(outcomes),
                                           repeated=True)
                return life
        memo[(state, LEAF)] = life_of(run, state, self.baseline_calls)
        lives, forks = after(run, lambda j, left: self._shared(runner, left, (*crashes, j), (*choices, left.choice),
                                                               advance, memo))
        memo[key] = life = life_of(run, state, self.baseline_calls, lives, forks, repeated=repeated)
        return life

    def _replayed(self, runner: Runner, crashes: tuple[int, ...], choices: tuple[Choice, ...], traces: list[Trace],
                  advance: Advance) -> Life:
        watch = len(crashes) < self.depth
        runs: list[ScenarioRun] = []
        strayed = False
        for _ in range(self.repeat):
            try:
                try:
                    run = runner.scenario(self.setup, crashes, choices, watch=watch)
                except NoSuchChoice as error:  # its death left fewer states than the same death of the run it repeats
                    raise Stray(f"{error}, where the run it repeats left the one it names: the loop is not "
                                "deterministic") from None
            except Stray:  # a process finished without reaching its crash point, or its death left other states
                if self.strays_fail:
                    raise
                strayed = True
                continue
            runs.append(run)
            try:
                for process, trace in enumerate(traces, start=1):
                    of = f"the restart of {self.setup.id(crashes[:process - 1], choices[:process - 1])}"
                    check_retrace(run, process, trace, of if process > 1 else "the uninterrupted run")
            except Stray:
                if self.strays_fail:
                    raise
                strayed = True
        advance(1)
        outcomes = [run.outcome(self.baseline_calls) for run in runs]
        first = runs[0] if runs else None
        if first is None or strayed or any(o != outcomes[0] or run.traces() != first.traces()
                                           for o, run in zip(outcomes[1:], runs[1:], strict=True)):
            # It strayed, or its repeats disagreed in what they did or what it came to: it is flaky, and
            # counts the worst of what it came to; what follows a death in it is no one run's to explore.
            return life_of(first, _start(first) if first else b"", self.baseline_calls,
                           outcome=flaky_outcome(outcomes))
        mine = first.trace(len(crashes) + 1)
        lives, forks = after(first, lambda j, left: self._replayed(runner, (*crashes, j), (*choices, left.choice),
                                                                   [*traces, mine], advance))
        return life_of(first, _start(first), self.baseline_calls, lives, forks)


def grow_all(branches: Sequence[Branch], runner: Runner, advance: Advance = _ignore,
             memo: dict | None = None) -> list[list[tuple[Choice, Life]]]:
    """Each branch's lives, in the branches' order, sharing one memo. Shared, they grow last first, for a restart
    from an early death's state passes the states later deaths leave, and a restart at the sweep's depth from one
    of them is then the process a later branch's restart already ran (`Branch._shared`); replayed, first first,
    so that the first scenario to stray is the first in the sweep's order."""
    memo = {} if memo is None else memo
    if not any(branch.share for branch in branches):
        return [branch.grow(runner, advance, memo) for branch in branches]
    return [branch.grow(runner, advance, memo) for branch in reversed(branches)][::-1]


#: A shared sweep runs each restart once, from a copy of what its death left, so nothing in it could show a loop that
#: does not repeat itself (a race that duplicates one time in four): a sample of its restarts runs twice, and a
#: scenario whose two runs differ is flaky, counted at the worst of them, as `--repeat` counts one re-executed. The
#: sample is every restart after a first death (each distinct state once): no more than the uninterrupted run's crash
#: points, a fraction of the restarts at depth 2 (the book's five designs: 85 more beside their 299), and the restarts
#: a person replays first.
REPEATED = 1


def _start(run: ScenarioRun) -> bytes:
    return run.start.state.fingerprint() if run.start and run.start.state else b""


@dataclass
class Trunk:
    """One tree's uninterrupted run, and the branches of its first crashes: the sweep before the bulk of it."""

    setup: Setup  # its faults fully configured
    run: ScenarioRun
    branches: list[Branch]

    def join(self, lives: Sequence[list[tuple[Choice, Life]]]) -> Tree:
        """The tree, from each branch's lives in the order of its first crash."""
        after = [life for grown in lives for _, life in grown]
        forks = [(branch.crash, choice) for branch, grown in zip(self.branches, lives, strict=True)
                 for choice, _ in grown]
        root = life_of(self.run, b"", self.run.world.model.calls, after, forks)
        return Tree(self.setup.faults, root, self.setup.faults.without_crash)


def trunk(setup: Setup, runner: Runner, depth: int = 2, share: bool = True, repeat: int = 1,
          strays_fail: bool = True, baselines: int = 2) -> Trunk:
    """The uninterrupted run, `baselines` times, to see that it repeats, and a branch per crash it allows.

    Shared, the last run snapshots the durable state at each point as it passes it; replayed, each
    branch will re-execute its crash from nothing.
    """
    depth = setup.faults.depth(depth)
    runs = []
    for k in range(baselines):
        watch = k == baselines - 1
        runs.append(runner.life(setup, None, (), (), watch=watch) if share else
                    runner.scenario(setup, (), (), watch=watch))
    run = runs[-1]
    for k, other in enumerate(runs[:-1], start=1):
        check_retrace(run, 1, other.trace(1), f"uninterrupted run {k}")
    if not setup.faults:  # a fault may break the uninterrupted run itself (a timeout): that is what it sweeps
        check_once(run)
    baseline, calls = run.trace(1), run.world.model.calls
    branches = [Branch(setup, depth, calls, j, group, (baseline,), share, repeat, strays_fail)
                for j, groups in enumerate(run.deaths or (), start=1) for group in groups]
    return Trunk(setup, run, branches)


@dataclass(frozen=True)
class Tree:
    """A sweep under one configuration of its faults: the lives rooted in the uninterrupted run."""

    faults: Faults
    root: Life
    counts_root: bool  # the uninterrupted run is a scenario too: a fault broke something without a crash


@dataclass(frozen=True, kw_only=True)
class Row(Counts):
    """One line of a table: a variant's counts, summed over every scenario up to the sweep's depth."""

    variant: str
    name: str
    faults: str = "crash"  # what it was swept under, as a column names it
    setting: str = ""  # the faults' settings, as a table says them
    points: int  # crash points of the uninterrupted run
    by_depth: tuple[int, ...]  # scenarios by number of crashes, from one
    uncrashed: int = 0  # scenarios with no crash at all
    distinct: int  # distinct durable states the scenarios' last crashes left: the restarts that had to run
    windows: int  # failure windows, each once (`VariantSweep.windows`): what does not grow with marking
    orders: str = ""  # the schedules of the loop's threads it ran, where a fault explores them ("8 of 61")
    #: Shared: restarts run twice to see that they repeat (`REPEATED`), each state as `VariantSweep.told` tells it. Not
    #: a count of the loop's: a re-executed sweep has none, and the two rows are equal without it.
    repeated: int = field(default=0, compare=False)

    @property
    def once(self) -> int:
        return self.crashed(1)

    @property
    def twice(self) -> int:
        return self.crashed(2)

    @property
    def scenarios(self) -> int:
        return sum(self.by_depth) + self.uncrashed

    def crashed(self, k: int) -> int:
        """The scenarios with exactly `k` crashes (0 beyond the sweep's depth)."""
        return self.by_depth[k - 1] if k <= len(self.by_depth) else 0

    def __str__(self) -> str:
        """The row as a person reads it, as `print(row)` shows it: its scenarios, then every count that is not 0.

        ``after-reply (save after the reply), crash: 688 scenarios, 76 distinct states, 6 windows; with dups
        306, dups 360, calls+ 234``."""
        counts = ", ".join(f"{COUNT_HEADS[key]} {value:,}" for key, value in self.counts().items() if value)
        return (f"{self.variant} ({self.name}), {self.faults}{f' ({self.setting})' if self.setting else ''}: "
                f"{self.scenarios:,} scenarios, {self.distinct:,} distinct states, {self.windows:,} windows; "
                f"{counts or 'nothing failed'}")


@dataclass(frozen=True)
class VariantSweep:
    """A variant's sweep: one tree, or one per configuration its faults vary over (each question a wrong
    answer can fall on), and the scenarios of them that the faults keep."""

    setup: Setup  # the faults as swept, before their variations
    first: ScenarioRun  # the uninterrupted run
    trees: tuple[Tree, ...]

    @property
    def varied(self) -> bool:
        return len(self.trees) != 1 or self.trees[0].faults != self.setup.faults

    @property
    def points(self) -> int:
        return len(self.first.points.points(1))

    @property
    def tally(self) -> Tally:
        """Every scenario's counts, summed; `by_depth` from one crash."""
        if self.varied:
            return sum((Tally.one(s.outcome, s.hits, s.saves, len(s.crashes)) for s in self.scenarios()), Tally())
        tree = self.trees[0]
        below = tree.root.below
        total = replace(below, by_depth=below.by_depth[1:])
        if tree.counts_root:
            total = total + Tally.one(tree.root.outcome, tree.root.hits, tree.root.saves, crashes=0)
        return total

    def told(self, life: Life) -> bytes:
        """What tells apart the state `life` started from, in the counts of states (`distinct`, `windows`): the state's
        fingerprint, for a loop whose progress is crashlab's checkpoint, which crashlab reads as a value that every run
        leaves alike; the life's `future` for a loop that keeps files of its own, whose bytes hold what each run drew
        (its run ID, a runtime's stamps) and what raced with its death. By its fingerprint, such a state would be new
        in every re-executed scenario, and its count in a shared sweep would hang on which copies met which: by its
        future, the shared sweep and the re-executed one count the same states, every run."""
        return life.state if self.setup.variant.keeps_checkpoint else life.future

    def distinct(self) -> int:
        """Distinct (state, process) pairs among the scenarios' last lives, each state as `told` tells it: for a loop
        that keeps crashlab's checkpoint, what the memo runs, but for a restart at the sweep's depth from a state a
        shallower restart started from, which is that restart's process."""
        seen: set[tuple[int, bytes, int]] = set()
        for k, tree in enumerate(self.trees):
            visited: set[int] = set()

            def walk(life: Life, process: int, k: int = k, visited: set[int] = visited) -> None:
                for nxt in life.after:
                    seen.add((k, self.told(nxt), process + 1))
                    if id(nxt) not in visited:
                        visited.add(id(nxt))
                        walk(nxt, process + 1)

            walk(tree.root, 1)
        return len(seen)

    def repeated(self) -> int:
        """The restarts that ran twice, from one copy, to see that they repeat: each state once, as `told` tells it."""
        seen: set[tuple[int, bytes, int]] = set()
        for k, tree in enumerate(self.trees):
            def walk(life: Life, process: int, k: int = k) -> None:
                for nxt in life.after:
                    if nxt.repeated:
                        seen.add((k, self.told(nxt), process + 1))
                    if process < REPEATED:
                        walk(nxt, process + 1)

            walk(tree.root, 1)
        return len(seen)

    def row(self) -> Row:
        t, faults = self.tally, self.setup.faults
        settings = ", ".join(f.said for f in faults.members if f.said)
        orders = next((said for f in faults.members if (said := f.explored(self))), "")
        return Row(**t.counts(), variant=self.setup.variant.slug, name=self.setup.variant.name, faults=faults.name,
                   setting=settings, points=self.points, by_depth=t.by_depth, uncrashed=t.uncrashed,
                   distinct=self.distinct(), windows=self.windows(), orders=orders, repeated=self.repeated())

    def scenarios(self) -> Iterator[ScenarioResult]:
        """Every scenario, in order: ``I``, then ``I:1``, its own scenarios below, ``I:2``, and so on."""
        if not self.varied:
            return self._walk(self.trees[0])
        kept = [s for tree in self.trees for s in self._walk(tree) if tree.faults.keeps(s)]
        return iter(sorted(kept, key=lambda s: (s.crashes, s.id)))

    def windows(self) -> int:
        """Failure windows: spans of consecutive crash points of one process (after the same deaths, in the same
        state each left) whose scenarios fail the same way, as `crashlab.report.windows` tells them; a process
        that starts from a state another process of its depth started from (as `told` tells states apart) has the
        same windows, and they count once.

        A crash point marked where nothing durable happens (a log line) adds a scenario the same as its
        neighbour's, and a restart from the same state as its neighbour's: the scenarios grow with how densely
        a loop is marked, the windows do not.
        """
        total = 0
        for tree in self.trees:
            visited: set[tuple[bytes, int]] = set()

            def walk(life: Life, path: _Path, tree: Tree = tree, visited: set[tuple[bytes, int]] = visited) -> None:
                nonlocal total
                if (self.told(life), len(path[0])) in visited:
                    return
                visited.add((self.told(life), len(path[0])))
                last: dict[Choice, tuple[int, Failure | None]] = {}  # per state a death leaves: its last fork
                for result, nxt, further in self._forks(tree, life, path):
                    if self.varied and not tree.faults.keeps(result):
                        continue
                    j, choice, failed = result.crashes[-1], further[1][-1], failure(result.outcome)
                    total += failed is not None and last.get(choice) != (j - 1, failed)
                    last[choice] = (j, failed)
                    walk(nxt, further)

            walk(tree.root, ((), (), (), 0, 0))
            total += tree.counts_root and failure(tree.root.outcome) is not None
        return total

    def _walk(self, tree: Tree) -> Iterator[ScenarioResult]:
        slug, tags = self.setup.variant.slug, tree.faults.tag + profile_tag(self.setup.profile)

        def walk(life: Life, path: _Path) -> Iterator[ScenarioResult]:
            for result, nxt, further in self._forks(tree, life, path):
                yield result
                yield from walk(nxt, further)

        root = tree.root
        if tree.counts_root:
            yield ScenarioResult(scenario_id(slug, tags, ()), slug, (), (), root.outcome, root.hits, root.saves)
        yield from walk(root, ((), (), (), 0, 0))

    def _forks(self, tree: Tree, life: Life, path: _Path) -> Iterator[tuple[ScenarioResult, Life, _Path]]:
        """The scenarios that crash `life`, reached by `path`: each with the life after its crash, and its path."""
        slug, tags = self.setup.variant.slug, tree.faults.tag + profile_tag(self.setup.profile)
        crashes, choices, points, hits, saves = path
        names = named(life.labels)
        for (j, choice), nxt in zip(life.forks, life.after, strict=True):
            further = ((*crashes, j), (*choices, choice), (*points, names[j - 1]), hits + j,
                       saves + life.saves_by[j - 1])
            on = further[1] if any(further[1]) else ()
            yield ScenarioResult(scenario_id(slug, tags, further[0], on), slug, further[0], further[2], nxt.outcome,
                                 further[3] + nxt.hits, further[4] + nxt.saves, on), nxt, further


#: How a scenario was reached: its crashes, the choice each death left, each crash's point, and the
#: crash points and saves its processes passed before its last life.
_Path = tuple[tuple[int, ...], tuple[Choice, ...], tuple[str, ...], int, int]
