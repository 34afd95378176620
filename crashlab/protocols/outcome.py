"""What a scenario did to the world, and the counts a table sums: the one place they are defined.

An outcome is read off the world after the last process has finished, against what the job means
to do: each intended effect exactly once. `Counts` names every column a row sums, with its head and
what it counts, so the tables, JSON, CSV, golden files and help texts all take them from here.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, fields
from typing import Any

from crashlab.durable.checkpoint import Checkpoint
from crashlab.job import Call, intended
from crashlab.world import CONTRACT_REFUSAL, Record, World


@dataclass(frozen=True)
class Outcome:
    """What a scenario did to the world, against what the job should have done exactly once."""

    dups: dict[str, int]  # intended effect -> extra copies in the tracker
    missing: tuple[str, ...]  # intended effects with no record at all
    asks: int  # "did it happen?" questions to the person, over all processes
    calls_plus: int  # model calls beyond those of the uninterrupted run
    approvals: int  # approval questions put to the person, over all processes
    wrong: tuple[str, ...] = ()  # calls whose saved result, or whose comment, names a record the job did not mean
    stuck: int = 0  # 1 when the run cannot go on without a person: its checkpoint is unreadable
    orphans: int = 0  # records in the tracker that no intended effect accounts for
    flaky: int = 0  # 1 when repeats of the scenario disagreed, or a process strayed from the run it repeats
    #: A flaky scenario's distinct outcomes, as its repeats gave them, each with how many gave it.
    seen: tuple[tuple[Outcome, int], ...] = ()

    @property
    def extra(self) -> int:
        return sum(self.dups.values())


def flaky_outcome(outcomes: Sequence[Outcome]) -> Outcome:
    """The outcome of a scenario whose repeats disagreed (or strayed): flaky, with every outcome they gave.

    Its counts are the worst its repeats gave, each its largest: an effect duplicated or lost in one
    repeat is counted so, since a loop that duplicates only sometimes duplicates. Counting it as
    flaky alone, or by one repeat's outcome, would let a race average its duplicates away.
    """
    distinct: list[Outcome] = []
    times: list[int] = []
    for outcome in outcomes:
        if outcome in distinct:
            times[distinct.index(outcome)] += 1
        else:
            distinct.append(outcome)
            times.append(1)
    dups: dict[str, int] = {}
    for o in outcomes:
        for effect, n in o.dups.items():
            dups[effect] = max(dups.get(effect, 0), n)

    def union(of: str) -> tuple[str, ...]:
        return tuple(dict.fromkeys(name for o in outcomes for name in getattr(o, of)))

    def most(of: str) -> int:
        return max((getattr(o, of) for o in outcomes), default=0)

    return Outcome(dups, union("missing"), most("asks"), most("calls_plus"), most("approvals"), union("wrong"),
                   most("stuck"), most("orphans"), flaky=1,
                   seen=tuple(zip(distinct, times, strict=True)))


#: How a scenario failed, compared exactly: (dups, missing, wrong, orphans, stuck, flaky).
Failure = tuple[tuple[tuple[str, int], ...], tuple[str, ...], tuple[str, ...], int, int, int]


def failure(outcome: Outcome) -> Failure | None:
    """How a scenario failed, or None if it did not: asked questions and extra model calls alone are no failure."""
    o = outcome
    if not (o.dups or o.missing or o.wrong or o.orphans or o.stuck or o.flaky):
        return None
    return tuple(sorted(o.dups.items())), o.missing, o.wrong, o.orphans, o.stuck, o.flaky


def column(head: str, means: str) -> dict[str, str]:
    return {"head": head, "means": means}


@dataclass(frozen=True)
class Counts:
    """The counts a row sums over its scenarios, in the order the tables show them."""

    with_dups: int = field(default=0, metadata=column("with dups", "scenarios that left at least one duplicate"))
    dups: int = field(default=0, metadata=column("dups", "duplicate records: copies of an effect beyond the first"))
    missing: int = field(default=0, metadata=column("missing", "intended effects that left no record at all"))
    wrong: int = field(default=0, metadata=column(
        "wrong", "calls whose saved result names a record the call did not make, or a comment on the wrong issue"))
    asks: int = field(default=0, metadata=column("asks", "questions to a person: did this call reach the tracker?"))
    approvals: int = field(default=0, metadata=column("approvals", "approval decisions asked of a person"))
    calls_plus: int = field(default=0, metadata=column("calls+", "model calls beyond the uninterrupted run's"))
    stuck: int = field(default=0, metadata=column(
        "stuck", "runs that cannot go on: an unreadable checkpoint, or a restart that fails in what its deaths left"))
    orphans: int = field(default=0, metadata=column("orphans", "records no intended effect accounts for"))
    flaky: int = field(default=0, metadata=column(
        "flaky", "scenarios whose repeats disagreed or strayed, each also counted by the worst they gave"))

    @classmethod
    def of(cls, o: Outcome) -> Counts:
        """One scenario, counted as a row counts it."""
        return cls(int(o.extra > 0), o.extra, len(o.missing), len(o.wrong), o.asks, o.approvals, o.calls_plus,
                   o.stuck, o.orphans, o.flaky)

    def counts(self) -> dict[str, int]:
        """Every count by its key, in table order."""
        return {name: getattr(self, name) for name in COUNT_KEYS}


#: The count columns' keys, in table order.
COUNT_KEYS: tuple[str, ...] = tuple(f.name for f in fields(Counts))
#: Each count column's head, as a table prints it.
COUNT_HEADS: dict[str, str] = {f.name: f.metadata["head"] for f in fields(Counts)}
#: What each count column counts, as help texts and the docs say it.
COUNT_MEANS: dict[str, str] = {f.name: f.metadata["means"] for f in fields(Counts)}


def outcome_of(world: World, effects: Sequence[Call], final: Checkpoint | None, finished: bool,
               baseline_calls: int) -> Outcome:
    """The world's counts against `effects`, what the run means to do once each.

    A record stands for the effect its call ID names (`job.intended`: a drifting model's ``A#2`` is
    A). With `final`, the checkpoint the run ended with, a saved result is checked against the
    records its call made; a run that is not `finished` (stuck on an unreadable checkpoint) has made
    its duplicates, but what it has not done yet is not missing.
    """
    turns = final.turns if final else ()
    results = {intended(cid): result for cid, result in final.results().items()} if final else {}
    # Not made, by the loop's own account: the person refused it, or a text is its saved result (the
    # person refused it, or the issue it comments on was never made). Not a request the receiver's
    # contract refused (no key where one is required): the loop lost that effect by how it sent it.
    refused = {intended(cid) for turn in turns for cid, ok in turn.approvals.items() if not ok}
    texts = {cid for cid, result in results.items() if isinstance(result, str)}
    contract = {cid for cid in texts if CONTRACT_REFUSAL in results[cid]}
    refused |= texts - contract
    dups, missing, wrong = {}, [], []
    for call in effects:
        made = world.made_by(call.id)
        if len(made) > 1:
            dups[call.id] = len(made) - 1
        elif not made and call.id not in refused and finished:
            missing.append(call.id)
        if final and not _meant(world, call, made, results, call.id in refused | contract):
            wrong.append(call.id)
    saved = {call.id for turn in turns for call in turn.calls} or {call.id for call in effects}
    orphans = sum(1 for r in world.tracker.records[world.earlier:] if r.call not in saved and r.call != "search")
    calls_plus = world.model.calls - baseline_calls  # negative only for a stuck run, which stopped short
    person = world.person
    return Outcome(dups, tuple(missing), person.asks, max(calls_plus, 0), person.approvals, tuple(wrong),
                   int(not finished), orphans)


def _meant(world: World, call: Call, made: list[Record], results: dict[str, Any], refused: bool) -> bool:
    """Whether the call's saved result names one of its own records, and its comments the issue meant."""
    result = results.get(call.id)
    if refused:
        ok = not made and isinstance(result, str)
    else:
        ok = result is None or result in {r.number for r in made}
    if call.tool == "comment":
        ref = call.ref
        meant = {r.number for r in world.made_by(ref) if r.kind == "issue"} if ref else {call.args["issue"]}
        ok = ok and all(r.issue in meant for r in made)
    return ok
