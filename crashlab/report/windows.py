"""A sweep's failures as windows: the spans of crash points where a death does the same harm.

A sweep's failing scenarios come in runs: a loop that duplicates when it dies between the
tracker's commit and its own save does so at every point in between. A window is a maximal span of
consecutive crash points of one process (consecutive values of the last crash index, with the same
earlier deaths and the same fault choices) whose scenarios fail the same way: the same duplicates,
the same effects lost, the same wrong results, orphans, stuck run and flakiness. One line per window
says where the process can die to do that harm, and how to replay the first scenario of it.

Grouping reads each scenario's `crashes` and `choices`, never its ID: the ID is only used as a
whole, to keep the scenarios of different variants or fault settings apart.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass, field

from crashlab.protocols.death import Choice
from crashlab.protocols.outcome import Failure, Outcome, failure
from crashlab.protocols.scenario import ScenarioResult, scenario_id

#: Which scenarios may share a window: the variant and faults, the earlier crashes, and every choice.
Group = tuple[str, tuple[int, ...], tuple[Choice, ...]]


@dataclass(frozen=True)
class Window:
    """Consecutive crash points of one process, with the same deaths before, where a death does the same harm."""

    earlier: tuple[str, ...]  # the points of the earlier deaths, one per process that died before: ("saved#2",)
    first: str  # the span's first crash point, as label#occurrence ("" for a scenario with no crash)
    last: str  # its last crash point
    first_id: str  # the scenario that dies at `first`
    last_id: str  # the scenario that dies at `last`
    scenarios: int  # how many scenarios the span holds: one per crash point
    failure: str  # what each of them did, as people read it: "A made twice, C lost"
    #: A window at one crash point may span instead the states its death leaves (where a late request
    #: lands): their choices, "~1 to ~13"; "" for a span of crash points.
    states: str = ""
    #: Its scenarios, in the order swept: what a receipt records of each (its ID, its deaths, its outcome).
    members: tuple[ScenarioResult, ...] = field(default=(), compare=False, repr=False)


def said(outcome: Outcome) -> str:
    """A failure as a short phrase: "A made twice, C lost"; questions alone (a window of `windows(asked=True)`),
    "asked a person twice"."""
    o = outcome
    if failure(o) is None and o.asks:
        return f"asked a person {'once' if o.asks == 1 else 'twice' if o.asks == 2 else f'{o.asks} times'}"
    parts = [f"{effect} made {'twice' if n == 1 else f'{n + 1} times'}" for effect, n in o.dups.items()]
    parts += [f"{effect} lost" for effect in o.missing]
    if o.wrong:
        parts.append(f"{', '.join(o.wrong)} {'names' if len(o.wrong) == 1 else 'name'} the wrong record")
    if o.orphans:
        parts.append(f"{o.orphans} stray record{'s' if o.orphans > 1 else ''} no effect accounts for")
    if o.stuck:
        parts.append("stuck: the run cannot go on")
    if o.flaky:
        parts.append("flaky: its repeats disagreed or a process strayed")
        if o.seen:  # what each way it went came to: the counts before are the worst of them
            gave = dict.fromkeys(said(seen) or "no harm" for seen, _ in o.seen)
            parts[-1] += f" (it came to {' / '.join(gave)})"
    return ", ".join(parts)


@dataclass
class _Open:
    """A window still growing: it takes the next crash point of its group if that fails the same way."""

    order: int  # where its first scenario came in the stream: windows are listed in that order
    failure: Hashable
    index: int  # its last crash index
    window: Window
    group: Group  # its last scenario's

    def take(self, s: ScenarioResult) -> None:
        self.index = s.crashes[-1]
        w = self.window
        self.window = Window(w.earlier, w.first, s.points[-1], w.first_id, s.id, w.scenarios + 1, w.failure,
                             members=(*w.members, s))


def _group(s: ScenarioResult) -> Group:
    """The scenario's group: its ID without the crashes and choices (the variant and its faults), the earlier
    crashes, and the choices; the ID's tail is rebuilt from `crashes` and `choices`, not parsed."""
    tail = scenario_id("", "", s.crashes, s.choices)
    head = s.id[: len(s.id) - len(tail)] if s.id.endswith(tail) else s.variant
    return head, s.crashes[:-1], s.choices


def harm(outcome: Outcome, asked: bool) -> Hashable | None:
    """What a window's scenarios share: their failure; with `asked`, where they did not fail, how many questions
    they put to a person (the ladder working as meant, but a cost a report shows beside the failures)."""
    failed = failure(outcome)
    return ("asked", outcome.asks) if failed is None and asked and outcome.asks else failed


def windows(scenarios: Iterable[ScenarioResult], asked: bool = False) -> list[Window]:
    """The failing scenarios, grouped into windows, in the order of each window's first scenario; with `asked`,
    the scenarios that asked a person and did not fail too, in windows of their own.

    `scenarios` may be a stream in sweep order; only the open window of each group is held while it
    grows. Every failing scenario lands in exactly one window; a scenario with no crash at all (a fault
    that breaks the run without one) is a window of its own.
    """
    done: list[_Open] = []
    growing: dict[Group, _Open] = {}
    for order, s in enumerate(scenarios):
        failed = harm(s.outcome, asked)
        if not s.crashes:
            if failed is not None:
                done.append(_Open(order, failed, 0, Window((), "", "", s.id, s.id, 1, said(s.outcome),
                                                                members=(s,)), _group(s)))
            continue
        group = _group(s)
        current = growing.get(group)
        if current is not None and failed == current.failure and s.crashes[-1] == current.index + 1:
            current.take(s)
            continue
        if current is not None:
            done.append(growing.pop(group))
        if failed is not None:
            point = s.points[-1]
            window = Window(s.points[:-1], point, point, s.id, s.id, 1, said(s.outcome), members=(s,))
            growing[group] = _Open(order, failed, s.crashes[-1], window, group)
    done += growing.values()
    return _across_states(sorted(done, key=lambda window: window.order))


def _across_states(done: list[_Open]) -> list[Window]:
    """Join the windows of one scenario each that die at one crash point, one after another in the states the
    death leaves (~1, ~2, ...), and fail the same way: one line where a late request may land anywhere."""
    joined: list[_Open] = []
    for this in done:
        last = joined[-1] if joined else None
        if last is not None and last.failure == this.failure and last.index == this.index and \
                _next_state(last, this):
            w, first = last.window, this.group[2][-1][-1] - last.window.scenarios
            last.window = Window(w.earlier, w.first, w.last, w.first_id, this.window.last_id, w.scenarios + 1,
                                 w.failure, f"~{first} to ~{this.group[2][-1][-1]}", (*w.members, *this.window.members))
            last.group = this.group
        else:
            joined.append(this)
    return [window.window for window in joined]


def _next_state(last: _Open, this: _Open) -> bool:
    """Whether `this` is one scenario that dies where `last` (a window of one crash point) does, in the state
    after `last`'s last: the two groups differ only in the last number of their last choice, by one."""
    (head, earlier, choices), (this_head, this_earlier, these) = last.group, this.group
    if this.window.scenarios != 1 or not these or not these[-1] or not choices or not choices[-1]:
        return False
    if last.window.first != last.window.last or (head, earlier) != (this_head, this_earlier):
        return False
    return (choices[:-1], choices[-1][:-1], choices[-1][-1] + 1) == (these[:-1], these[-1][:-1], these[-1][-1])


@dataclass(frozen=True)
class Cause:
    """One harm a death does, wherever it falls: what it adds to the harm the earlier deaths did (``C made again``),
    and the crash points where a death of any process adds it, with how many windows and scenarios it accounts for.

    A loop that duplicates when it dies between a commit and its save does so after any earlier death too: at
    depth 2 each earlier death is a window of its own, and the windows repeat one cause. A cause is that one line.
    """

    harm: str
    points: tuple[str, ...]  # label#occurrence of the dying process, in the order first seen
    windows: int
    scenarios: int
    first_id: str


def added(outcome: Outcome, before: Outcome | None) -> str:
    """What `outcome` holds beyond `before` (the scenario of the earlier deaths alone; None: the uninterrupted run,
    which did no harm), as a short phrase: ``C made again`` (one copy more than before, however many there were)."""
    before = before or Outcome({}, (), 0, 0, 0)
    more = {effect: n - before.dups.get(effect, 0) for effect, n in outcome.dups.items()}
    parts = [f"{effect} made again" if n == 1 else f"{effect} made {n} more times"
             for effect, n in more.items() if n > 0]
    parts += [f"{effect} lost" for effect in outcome.missing if effect not in before.missing]
    parts += [f"{call} names the wrong record" for call in outcome.wrong if call not in before.wrong]
    if outcome.orphans > before.orphans:
        parts.append("a stray record no effect accounts for")
    if outcome.stuck and not before.stuck:
        parts.append("stuck: the run cannot go on")
    if outcome.flaky and not before.flaky:
        parts.append("flaky: its repeats disagreed or a process strayed")
    return ", ".join(parts)


def causes(scenarios: Iterable[ScenarioResult]) -> list[Cause]:
    """The failing scenarios by what their last death added to the harm, and where it fell: one cause each, in the
    order first seen. A scenario whose last death added nothing (the harm is all its earlier deaths') is no cause's:
    it failed where those deaths fell, and that scenario counts. `scenarios` may be a stream in sweep order (each
    scenario after the one of its earlier deaths alone): only its ancestors, and each group's last scenario, are
    held. The scenario a cause replays is the shallowest that shows it, found by its crashes, not its ID."""
    found: dict[str, Cause] = {}
    depth: dict[str, int] = {}  # each cause's replayed scenario's crashes
    ancestors: list[ScenarioResult] = []
    last: dict[Group, tuple[int, Failure | None]] = {}  # each group's last crash index and failure: a window's edge
    for s in scenarios:
        group = _group(s)
        while ancestors and (_group(ancestors[-1])[0] != group[0] or
                             ancestors[-1].crashes != s.crashes[: len(ancestors[-1].crashes)]):
            ancestors.pop()
        before = ancestors[-1].outcome if ancestors and ancestors[-1].crashes == s.crashes[:-1] else None
        ancestors.append(s)
        failed = failure(s.outcome)
        if not s.crashes:
            continue
        opens = last.get(group) != (s.crashes[-1] - 1, failed)  # this scenario starts a window of its own
        last[group] = (s.crashes[-1], failed)
        if failed is None or not (harm := added(s.outcome, before)):
            continue
        known = found.get(harm)
        if known is None:
            found[harm], depth[harm] = Cause(harm, (s.points[-1],), 1, 1, s.id), len(s.crashes)
            continue
        shallower = len(s.crashes) < depth[harm]
        depth[harm] = min(depth[harm], len(s.crashes))
        found[harm] = Cause(harm, tuple(dict.fromkeys((*known.points, s.points[-1]))), known.windows + opens,
                            known.scenarios + 1, s.id if shallower else known.first_id)
    return list(found.values())


def tell(cause: Cause, replay: Callable[[str], str]) -> str:
    """One line for a cause: ``C made again whenever a process dies at `accepted#3` or `answered#3` (12 windows,
    24 scenarios); replay: ...``."""
    points = [f"`{p}`" for p in cause.points]
    at = points[0] if len(points) == 1 else ", ".join(points[:-1]) + f" or {points[-1]}"
    count = f"{cause.windows} window{'s' if cause.windows != 1 else ''}, {cause.scenarios} scenario" + \
        ("s" if cause.scenarios != 1 else "")
    return f"{cause.harm} whenever a process dies at {at} ({count}); replay: {replay(cause.first_id)}"


def _ordinal(n: int) -> str:
    return {2: "second", 3: "third", 4: "fourth", 5: "fifth"}.get(n, f"{n}th")


def describe(window: Window, replay: Callable[[str], str]) -> str:
    """One line for a window, with the command `replay` gives for its first scenario:

    "A made twice when the process dies anywhere from `accepted#1` to `written#1` (3 scenarios, loop:1 to
    loop:3); replay: ..."; at depth 2, "... when, after a first death at `saved#2`, the restart dies ...".
    """
    w = window
    if not w.first:
        where = "with no process dying"
    else:
        at = f"at `{w.first}`" if w.first == w.last else f"anywhere from `{w.first}` to `{w.last}`"
        at += f", in each state its death leaves from {w.states}" if w.states else ""
        if not w.earlier:
            where = f"when the process dies {at}"
        elif len(w.earlier) == 1:
            where = f"when, after a first death at `{w.earlier[0]}`, the restart dies {at}"
        else:
            deaths = " then ".join(f"`{p}`" for p in w.earlier)
            where = f"when, after deaths at {deaths}, the {_ordinal(len(w.earlier) + 1)} process dies {at}"
    count = f"{w.scenarios} scenario{'s' if w.scenarios != 1 else ''}"
    ids = w.first_id if w.first_id == w.last_id else f"{w.first_id} to {w.last_id}"
    return f"{w.failure} {where} ({count}, {ids}); replay: {replay(w.first_id)}"
