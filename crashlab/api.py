"""Sweep a loop crashlab did not write: mark its crash points, give its tools a tracker, and kill it for real.

Your loop is an entry point, ``entry(run)``, that does one process's share of the work: it starts
or resumes from whatever it keeps in ``run.directory``, and its tools change the world through
``run.tracker`` (an issue tracker in a SQLite file, with keys and lookups). It marks where it can die
with ``crashlab.point(label)``, which does nothing outside a sweep, so the marks can stay in
production code; the tracker marks ``accepted`` itself, right after it commits a request.

`sweep` runs the entry point uninterrupted, in a forked process, more than once, and refuses a loop
whose runs pass different points. Then, for every point, it forks a process that SIGKILLs itself
there, forks a restart over the same files, and lets it finish (crashing the restarts too, up to
`depth`); afterwards it counts, from the tracker's file, each intended effect's records: a
duplicate is a second record of one effect, a missing effect has none. A point is named by its
label and occurrence (``accepted#2``), not by position alone, so a crash lands on the same event
even if other points move. Each scenario can run `repeat` times; one whose outcomes differ between
repeats, or whose process never reached its point, is flaky, reported and counted apart.
"""

from __future__ import annotations

import shutil
import tempfile
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import msgspec

import crashlab
from crashlab.engine.points import HarnessError, Recorder
from crashlab.job import Call
from crashlab.runners.forked import die, empty_world, ended_by, forked, killed, returned
from crashlab.world import TRACKER_MODES, Record
from crashlab.world.sqlite import TRACKER_FILE, Database, SqliteTracker

#: A crash point as a sweep of your loop names it: its label and which occurrence of that label.
Point = tuple[str, int]


class Tracker:
    """The issue tracker your tools talk to: records and keys in a SQLite file that outlives a kill.

    Every record is tagged with the intended `effect` it serves (the sweep counts records per
    effect). A keyed tracker answers a known key with its first answer and changes nothing; a
    ``lookup`` tracker ignores keys on requests but answers `lookup`; a ``fencing`` one also fences a
    key its lookup did not find, and refuses a request under it (`crashlab.world.Fenced`); a
    ``keyless`` one does none of these.
    """

    def __init__(self, db: Database, points: Recorder, mode: str = "keyed"):
        self._tracker = SqliteTracker(points, db, mode)

    def create_issue(self, effect: str, title: str, body: str = "", key: str | None = None) -> int:
        """File an issue; its number. Commits before it answers, then passes the point ``accepted``."""
        args = {"title": title, "body": body}
        return self._tracker.request(Call(effect, "create_issue", args), args, key)

    def comment(self, effect: str, issue: int, body: str, key: str | None = None) -> int:
        """Comment on issue `issue`; the comment's number."""
        args = {"issue": issue, "body": body}
        return self._tracker.request(Call(effect, "comment", args), args, key)

    def search(self, query: str) -> list[int]:
        """Read only: the issues whose text mentions `query`."""
        return self._tracker.search(Call("search", "search", {"query": query}), query)

    def lookup(self, key: str) -> int | None:
        """The first answer to a request with this key, or None (keyed, lookup and fencing trackers only)."""
        return self._tracker.lookup(key)

    @property
    def records(self) -> list[Record]:
        return self._tracker.records


@dataclass(frozen=True)
class Run:
    """What one process of your loop gets: a directory for what it keeps, and the tracker."""

    directory: Path
    tracker: Tracker
    process: int  # 1 for the first process of a scenario, 2 for its restart, ...


Entry = Callable[[Run], Any]


@dataclass(frozen=True)
class Scenario:
    """One scenario's outcome: where each process died, and what the tracker holds per effect."""

    id: str
    crashes: tuple[str, ...]  # each dead process's point, as ``label#occurrence``
    records: dict[str, int]  # effect -> records made for it
    flaky: str = ""  # why it is counted apart: repeats that disagreed, a point never reached

    @property
    def dups(self) -> int:
        return sum(n - 1 for n in self.records.values() if n > 1)

    @property
    def missing(self) -> tuple[str, ...]:
        return tuple(effect for effect, n in self.records.items() if n == 0)

    def story(self) -> str:
        held = ", ".join(f"{effect} ×{n}" for effect, n in self.records.items())
        crashes = " then ".join(f"killed at {c}" for c in self.crashes)
        return f"{self.id}: {crashes}; restarted and finished; the tracker holds {held}" + (
            f" (flaky: {self.flaky})" if self.flaky else "")


@dataclass(frozen=True)
class Sweep:
    """Every scenario of a sweep of your loop, with the table's sums over the steady ones."""

    name: str
    points: tuple[str, ...]  # the uninterrupted run's points, as ``label#occurrence``
    scenarios: tuple[Scenario, ...]

    @property
    def steady(self) -> list[Scenario]:
        return [s for s in self.scenarios if not s.flaky]

    @property
    def flaky(self) -> list[Scenario]:
        return [s for s in self.scenarios if s.flaky]

    @property
    def with_dups(self) -> int:
        return sum(1 for s in self.steady if s.dups)

    @property
    def dups(self) -> int:
        return sum(s.dups for s in self.steady)

    @property
    def missing(self) -> int:
        return sum(len(s.missing) for s in self.steady)

    def failures(self) -> list[str]:
        """A line for each scenario that duplicated, lost an effect or was flaky: what a test prints."""
        return [s.story() for s in self.scenarios if s.dups or s.missing or s.flaky]

    def row(self) -> dict[str, Any]:
        return {"variant": self.name, "points": len(self.points), "scenarios": len(self.scenarios),
                "with_dups": self.with_dups, "dups": self.dups, "missing": self.missing, "flaky": len(self.flaky)}


class _Process(Recorder):
    """The recorder of one forked process of your loop: it names points by occurrence and kills at its own."""

    def __init__(self, target: Point | None, last_words: Callable[[], None]):
        super().__init__()
        self.target = target
        self.last_words = last_words
        self.seen: Counter[str] = Counter()
        self.trace: list[Point] = []

    def hit(self, label: str) -> None:
        super().hit(label)
        self.seen[label] += 1
        self.trace.append((label, self.seen[label]))
        if self.trace[-1] == self.target:
            self.last_words()
            die()


class _Report(msgspec.Struct, array_like=True):
    trace: list[tuple[str, int]]
    ended: str  # "killed", "returned", or the error


def _live(entry: Entry, directory: Path, mode: str, process: int, target: Point | None) -> tuple[list[Point], bool]:
    """One process of your loop, forked: the points it passed, and whether it died at `target`."""

    def body(tell: Callable[[bytes], None]) -> None:
        def report(ended: str) -> None:
            tell(msgspec.msgpack.encode(_Report(recorder.trace, ended)))

        recorder = _Process(target, lambda: report("killed"))
        recorder.start_process()
        crashlab._recorder = recorder
        try:
            with Database(directory / TRACKER_FILE) as db:
                entry(Run(directory, Tracker(db, recorder, mode), process))
            report("returned")
        except BaseException as error:  # noqa: BLE001 - the child reports every way it can end
            report(ended_by(error))

    status, said = forked(body)
    if not said:
        raise HarnessError(f"process {process} ended (wait status {status}) without a word: killed by something else?")
    report = msgspec.msgpack.decode(said, type=_Report)
    trace = [tuple(p) for p in report.trace]
    if report.ended == "killed" and killed(status):
        return trace, True
    if report.ended == "returned" and returned(status):
        return trace, False
    raise HarnessError(f"process {process} of your loop failed: {report.ended}")


def _name(p: Point) -> str:
    return f"{p[0]}#{p[1]}"


def _strayed(process: int, passed: list[Point], expected: list[Point]) -> str:
    """Why `passed` is not a prefix of the run the process repeats, or "" if it is."""
    if passed == expected[: len(passed)]:
        return ""
    k = next((k for k, (a, b) in enumerate(zip(passed, expected, strict=False)) if a != b), len(expected))
    meant = _name(expected[k]) if k < len(expected) else "nothing more"
    return f"process {process} passed {_name(passed[k])} at its point {k + 1}, where the run it repeats passed {meant}"


def sweep(entry: Entry, effects: Sequence[str], *, name: str = "loop", tracker: str = "keyed", depth: int = 1,
          repeat: int = 1, baselines: int = 2, workers: int = 1) -> Sweep:
    """Kill `entry` at every crash point it reaches (and its restarts, up to `depth`), and count each effect.

    `effects` are what the job means to do, each once: the `effect` names your tools give the tracker.
    With `workers` above 1, the subtrees of the first crashes run on a pool of forked processes (the
    entry point must then be picklable, as a module-level function or a partial of one is); the
    scenarios come back in the same order.
    """
    if tracker not in TRACKER_MODES:
        raise ValueError(f"unknown tracker {tracker!r} (valid: {', '.join(TRACKER_MODES)})")
    if depth < 1 or repeat < 1 or baselines < 1 or workers < 1:
        raise ValueError("depth, repeat, baselines and workers must be at least 1")
    plan = _Plan(entry, tuple(effects), name, tracker, depth, repeat)
    with _directories() as fresh:
        runs = [_live(entry, fresh(), tracker, 1, None)[0] for _ in range(baselines)]
    for k, other in enumerate(runs[1:], start=2):
        if other != runs[0]:
            pairs = enumerate(zip(runs[0], other, strict=False))
            step = next((i for i, (a, b) in pairs if a != b), min(len(runs[0]), len(other)))
            raise HarnessError(f"{name}: your loop is not deterministic: uninterrupted run {k} differs from run 1 "
                               f"at its point {step + 1}")
    firsts = list(enumerate(runs[0], start=1))
    if workers == 1:
        trees = [plan.subtree(first, runs[0]) for first in firsts]
    else:
        from crashlab.engine.parallel import on_pool

        trees = on_pool(workers)(partial(plan.subtree, baseline=runs[0]), firsts, lambda tree: None)
    return Sweep(name, tuple(map(_name, runs[0])), tuple(s for tree in trees for s in tree))


def explain(entry: Entry, effects: Sequence[str], scenario: str, *, tracker: str = "keyed") -> dict[str, Any]:
    """One scenario's story (``NAME:I`` or ``NAME:I:J...``, as `sweep` names them), process by process.

    The crash points are found again as the sweep found them: the uninterrupted run's for the first
    process, each restart's own for the next.
    """
    name, *numbers = scenario.split(":")
    if not numbers or not all(n.isascii() and n.isdigit() and int(n) > 0 for n in numbers):
        raise ValueError(f"{scenario!r} is not NAME:I[:J...] with I, J counted from 1")
    path = tuple(map(int, numbers))
    with _directories() as fresh:
        retraced, targets = _live(entry, fresh(), tracker, 1, None)[0], []
        for depth, k in enumerate(path, start=1):
            if k > len(retraced):
                restart = ":".join([name, *numbers[:depth - 1]])
                where = f"the restart of {restart}" if depth > 1 else "the uninterrupted run"
                raise ValueError(f"{where} reaches points 1..{len(retraced)}: no point {k}")
            targets.append(retraced[k - 1])
            if depth < len(path):  # the next process's points: its own, after this crash
                directory = fresh()
                for process, target in enumerate(targets, start=1):
                    _live(entry, directory, tracker, process, target)
                retraced = _live(entry, directory, tracker, len(targets) + 1, None)[0]
        directory, processes = fresh(), []
        for process, target in enumerate([*targets, None], start=1):
            passed, died = _live(entry, directory, tracker, process, target)
            ended = f"finished after {len(passed)} points"
            if died:
                ended = f"killed at {_name(target)}, its point {len(passed)}"
            processes.append({"process": process, "passed": list(map(_name, passed)), "ended": ended})
            if target is not None and not died:
                break
        with Database(directory / TRACKER_FILE, readonly=True) as db:
            records = db.records()
    made = Counter(r.call for r in records)
    return {"id": scenario, "processes": processes,
            "records": [{"kind": r.kind, "number": r.number, "effect": r.call, "key": r.key, "issue": r.issue}
                        for r in records],
            "dups": {e: made[e] - 1 for e in effects if made[e] > 1}, "missing": [e for e in effects if not made[e]]}


def render(told: dict[str, Any]) -> str:
    """`explain`'s story as text."""
    lines = [told["id"]]
    for p in told["processes"]:
        lines.append(f"process {p['process']}: {p['ended']}: {', '.join(p['passed']) or 'no point'}")
    held = ", ".join(f"{r['kind']} #{r['number']} ({r['effect']}" + (f", on #{r['issue']}" if r["issue"] else "") + ")"
                     for r in told["records"])
    lines.append(f"the tracker holds {held or 'nothing'}")
    dups = ", ".join(f"{e} +{n}" for e, n in told["dups"].items())
    lines.append(f"verdict: {'duplicates ' + dups if dups else 'no duplicate'}; "
                 f"{'missing ' + ', '.join(told['missing']) if told['missing'] else 'nothing missing'}")
    return "\n".join(lines)


@dataclass(frozen=True)
class _Plan:
    """What every scenario of one sweep shares: a plain value, so a subtree can grow in another process."""

    entry: Entry
    effects: tuple[str, ...]
    name: str
    tracker: str
    depth: int
    repeat: int

    def subtree(self, first: tuple[int, Point], baseline: list[Point]) -> list[Scenario]:
        """The scenarios whose first process dies at `first`, in order, in fresh directories of their own."""
        i, p = first
        with _directories() as fresh:
            return self.grow(fresh, (i,), (p,), (baseline,))

    def grow(self, fresh: Callable[[], Path], path: tuple[int, ...], targets: tuple[Point, ...],
             repeats: tuple[list[Point], ...]) -> list[Scenario]:
        """Scenario `path` (process k killed at `targets[k]`, retracing `repeats[k]` up to there) and those below it."""
        outcomes, traces, reasons = set(), [], set()
        for _ in range(self.repeat):
            directory, trace, reason = fresh(), None, ""
            for process, (target, expected) in enumerate(zip(targets, repeats, strict=True), start=1):
                passed, died = _live(self.entry, directory, self.tracker, process, target)
                reason = _strayed(process, passed, expected)
                if not reason and not died:
                    reason = f"process {process} never reached {_name(target)}"
                if reason:
                    break
            if not reason:
                trace, _ = _live(self.entry, directory, self.tracker, len(targets) + 1, None)
            with Database(directory / TRACKER_FILE, readonly=True) as db:
                made = Counter(r.call for r in db.records())
            outcomes.add(tuple((e, made[e]) for e in self.effects))
            traces.append(trace)
            reasons.add(reason)
        flaky = "; ".join(sorted(r for r in reasons if r))
        if len(outcomes) > 1:
            flaky = flaky or f"{len(outcomes)} different outcomes in {self.repeat} repeats"
        held = dict(sorted(outcomes)[0])
        found = [Scenario(":".join([self.name, *map(str, path)]), tuple(map(_name, targets)), held, flaky)]
        if len(path) < self.depth and not flaky and traces[0] is not None:
            for j, p in enumerate(traces[0], start=1):
                found += self.grow(fresh, (*path, j), (*targets, p), (*repeats, traces[0]))
        return found


@contextmanager
def _directories() -> Iterator[Callable[[], Path]]:
    """Fresh scenario directories under one root (on /dev/shm when there is one), each with an empty world."""
    shm = Path("/dev/shm")
    root = Path(tempfile.mkdtemp(prefix="crashlab-loop-", dir=shm if shm.is_dir() else None))
    made: list[Path] = []

    def fresh() -> Path:
        for old in made:
            shutil.rmtree(old, ignore_errors=True)
        made[:] = [Path(tempfile.mkdtemp(dir=root))]
        (made[0] / TRACKER_FILE).write_bytes(empty_world())
        return made[0]

    try:
        yield fresh
    finally:
        shutil.rmtree(root, ignore_errors=True)
