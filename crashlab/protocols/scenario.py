"""Scenarios: what one runs, its ID, one run of it, and the checks that make it sound.

Scenario ``SLUG:I`` crashes the first process at its I-th crash point, then lets a restart finish;
``SLUG:I:J`` also crashes that restart at its J-th point, and a third process finishes. Faults
beyond the crash are named after the slug (``SLUG+FAULT=VALUE:I~S``), and the receiver's
idempotency contract after them where it is not the default's (``SLUG+FAULT@qonto:I~S``,
`crashlab.profiles`), so an ID alone names everything needed to run the scenario again.

A scenario is only counted when it is sound: every process meant to die died where it was told
and did nothing after, the last process finished the run, and each process retraced the run it
repeats up to its crash point. Anything else is a `HarnessError` that names the scenario: the
table of a loop that breaks these rules would be a table of fiction.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from itertools import zip_longest
from typing import Any

from crashlab.durable.checkpoint import Checkpoint
from crashlab.durable.store import Store
from crashlab.errors import BadInput, HarnessError, Stray
from crashlab.job import Job, shown
from crashlab.job import intended as intended_call
from crashlab.profiles import DEFAULT, find
from crashlab.protocols.death import Choice, Left
from crashlab.protocols.fault import Faults, parse_tags
from crashlab.protocols.outcome import Outcome, outcome_of
from crashlab.protocols.points import Event, Recorder, Where, named
from crashlab.protocols.run import Program
from crashlab.protocols.variant import Variant
from crashlab.world import World

#: The events that are effects a repeat must make again: changing requests (a search too) and lookups.
EFFECTS = ("request", "lookup")


@dataclass(frozen=True)
class Step:
    """One thing a process did that a repeat of it must do again: pass a crash point, or make a request.

    A request is compared by everything the receiver reported of it (its tool, the call and arguments
    it names, whether it applied it, what it answered) and by its key, named by the order in which the
    scenario first used it: ``key 1`` is the first key sent. Two runs of a loop that makes a fresh
    random key for each call then agree, and a restart that resends a saved key (``key 1`` again)
    does not agree with one that lost it and made another (``key 2``): passing the same points is not
    enough, since a race can leave the points alone and change only the requests.
    """

    kind: str  # "point", or the request's kind
    label: str  # the point's label, or the request's tool
    where: Where
    said: tuple[tuple[str, Any], ...] = ()  # a request's report, its key named by first use
    key: str | None = field(default=None, compare=False)  # the key itself, as the loop sent it: for people to read

    def __str__(self) -> str:
        """A request as an error names it: ``create_issue A under key 'triage-1:A' (the scenario's key 1) (answer=1,
        applied=True, ...), start``: the loop's own key, and the order of its first use, by which two are compared."""
        told = dict(self.said)
        call, key = told.pop("call", ""), told.pop("key", None)
        rest = ", ".join(f"{name}={value!r}" for name, value in told.items())
        under = f"under key {self.key!r} (the scenario's {key})" if key else "with no key"
        return f"{self.kind} {self.label} {call} {under} ({rest}), {self.where}"


#: What one process did, in order, that a repeat must retrace: its crash points and its requests.
Trace = list[Step]


def trace_of(events: Iterable[Event], process: int) -> Trace:
    """Process `process`'s steps among `events` (a whole scenario's, in order, so that keys are named by their
    first use in the scenario, whichever process used them first)."""
    keys: dict[str, str] = {}
    steps = []
    for e in events:
        if e.kind in EFFECTS:
            key = e.detail.get("key")
            if key is not None:
                key = keys.setdefault(key, f"key {len(keys) + 1}")
            said = tuple(sorted({**e.detail, "key": key}.items()))
            if e.process == process:
                steps.append(Step(e.kind, e.label, e.where, said, e.detail.get("key")))
        elif e.kind == "point" and e.process == process:
            steps.append(Step("point", e.label, e.where))
    return steps


@dataclass(frozen=True)
class Setup:
    """What a scenario runs: a variant on a job, under faults, against a tracker keeping `profile`'s contract."""

    variant: Variant
    job: Job
    faults: Faults = field(default_factory=Faults)
    profile: str = DEFAULT

    def id(self, crashes: tuple[int, ...] = (), choices: tuple[Choice, ...] = ()) -> str:
        return scenario_id(self.variant.slug, self.faults.tag + profile_tag(self.profile), crashes, choices)

    @property
    def plays_model(self) -> bool:
        """Whether crashlab's service plays the job's model here: to a program (``--command``) on a job with calls."""
        return isinstance(self.variant.entry, Program) and bool(self.job.calls)


def profile_tag(profile: str) -> str:
    """A scenario ID's part for the receiver's contract: ``@SLUG``, or nothing for the default's."""
    return "" if profile == DEFAULT else f"@{profile}"


def scenario_id(slug: str, tags: str, crashes: tuple[int, ...], choices: tuple[Choice, ...] = ()) -> str:
    """``SLUG+FAULT=VALUE:I~S:J``: each crash, with the state its death left where a fault chooses one."""
    parts = [f"{i}~{'.'.join(map(str, c))}" if c else str(i) for i, c in zip_longest(crashes, choices, fillvalue=())]
    return slug + tags + "".join(f":{part}" for part in parts)


#: A scenario ID: a variant's slug; its faults, ``+SLUG`` or ``+SLUG=VALUE`` each; one crash point per
#: crashing process, after a colon, in ASCII digits, with ``~S`` (``~S.T`` for two faults that choose)
#: for the state its death left. A sign is allowed by the grammar so that ``keys:-1`` is answered "out
#: of range", not "malformed".
SCENARIO_ID = re.compile(r"(?P<slug>[a-z][a-z0-9-]*)(?P<faults>(?:\+[a-z][a-z0-9-]*(?:=[A-Za-z0-9._-]+)?)*)"
                         r"(?:@(?P<profile>[a-z][a-z0-9-]*))?"
                         r"(?P<crashes>(?::-?[0-9]+(?:~[0-9]+(?:\.[0-9]+)*)?)*)")
#: Far deeper than any sweep goes: it only keeps a pasted ID from running for ever.
MAX_CRASHES = 100
#: More digits than this name no crash point of any job a job file can hold.
MAX_POINT_DIGITS = 9


class ScenarioError(BadInput):
    """A scenario ID that names no scenario of this job; the message gives the valid choices."""


@dataclass(frozen=True)
class ScenarioId:
    """A parsed scenario ID: which variant, under which faults, and where each crashing process dies."""

    variant: Variant
    faults: Faults
    crashes: tuple[int, ...]
    choices: tuple[Choice, ...] = ()
    profile: str = DEFAULT


def parse_scenario_id(text: str, variants: Mapping[str, Variant]) -> ScenarioId:
    """Parse `text` as a whole (no trailing newline, ASCII digits only), the faults it names included."""
    match = SCENARIO_ID.fullmatch(text)
    if not match:
        raise ScenarioError(f"malformed scenario ID {shown(text)} (expected SLUG:I, SLUG:I:J and so on, in ASCII "
                            f"digits, with faults as SLUG+FAULT=VALUE:I~S, e.g. after-reply:7; SLUG is one of "
                            f"{', '.join(variants)})")
    slug = match["slug"]
    if slug not in variants:
        raise ScenarioError(f"unknown variant {shown(slug)} (valid: {', '.join(variants)})")
    try:
        faults = parse_tags(match["faults"])
    except BadInput as error:
        raise ScenarioError(f"scenario {shown(text)}: {error}") from None
    profile = match["profile"] or DEFAULT
    if profile == DEFAULT and match["profile"]:
        raise ScenarioError(f"scenario {shown(text)}: the default profile is named by no @{DEFAULT}")
    try:
        find(profile)
    except BadInput as error:
        raise ScenarioError(f"scenario {shown(text)}: {error}") from None
    parts = [part.split("~") for part in match["crashes"][1:].split(":")] if match["crashes"] else []
    if len(parts) > MAX_CRASHES:
        raise ScenarioError(f"scenario {shown(text)} crashes {len(parts)} processes: at most {MAX_CRASHES}")
    for number, *_ in parts:
        if len(number.lstrip("-")) > MAX_POINT_DIGITS:
            raise ScenarioError(f"{slug}: crash point {shown(number)} is out of range for any job")
    if not parts and not faults.without_crash:
        raise ScenarioError(f"scenario {shown(text)} names no crash: add one, as {slug}:1")
    if len(parts) > (most := faults.depth(len(parts))):
        times = "once" if most == 1 else f"{most} times"
        raise ScenarioError(f"scenario {shown(text)} crashes {len(parts)} processes, and under its faults a scenario "
                            f"crashes {times} at most")
    choosing = [f.slug for f in faults.members if f.chooses]
    choices = tuple(tuple(int(c) for c in part[1].split(".")) if len(part) > 1 else () for part in parts)
    for choice in choices:
        if 0 in choice:
            raise ScenarioError(f"scenario {shown(text)}: a ~ choice is counted from 1 (~1, ~2, ...)")
        if len(choice) != len(choosing):
            if not choosing:
                raise ScenarioError(f"scenario {shown(text)}: ~S names the state a death left under a fault that "
                                    "leaves several, and this scenario has none (a fault's choice for the whole "
                                    "scenario is its value: SLUG+FAULT=VALUE:I)")
            raise ScenarioError(f"scenario {shown(text)}: under {', '.join(choosing)} every crash names the state its "
                                f"death left, one number each: I~{'.'.join('S' * len(choosing))}")
    return ScenarioId(variants[slug], faults, tuple(int(part[0]) for part in parts), choices, profile)


@dataclass
class ScenarioRun:
    """One scenario, run: its recorder holds the story, its world and store the end state."""

    setup: Setup
    crashes: tuple[int, ...]
    choices: tuple[Choice, ...]
    points: Recorder
    world: World
    store: Store
    final: Checkpoint | None  # the checkpoint the last process left, for a loop that keeps crashlab's
    finished: bool  # the last process finished the run (False: it was stuck on an unreadable checkpoint)
    start: Left | None = None  # what the last crash left: where the last process started
    stuck: str | None = None  # why the last process could not start: its checkpoint unreadable
    left: tuple[str, ...] = ()  # what each death left, as people read it, where a fault made it more than a crash
    #: Watched: for each crash point of the last process, the states a death there can leave, in groups.
    deaths: list[list[Iterable[Left]]] | None = None

    @property
    def id(self) -> str:
        return self.setup.id(self.crashes, self.choices)

    def passed(self, process: int) -> int:
        """How many crash points process `process` (1-based) passed, the crash point included."""
        return sum(1 for e in self.points.events if e.kind == "point" and e.process == process)

    def trace(self, process: int) -> Trace:
        return trace_of(self.points.events, process)

    def traces(self) -> list[Trace]:
        """Every process's trace: what a repeat of the whole scenario must do again."""
        return [self.trace(process) for process in range(1, self.points.process + 1)]

    def outcome(self, baseline_calls: int) -> Outcome:
        """The world's counts against what the variant means to do, each effect exactly once."""
        effects = self.setup.variant.intended(self.setup.job)
        return outcome_of(self.world, effects, self.final, self.finished, baseline_calls)

    def result(self, baseline_calls: int) -> ScenarioResult:
        """The scenario as a sweep keeps it."""
        crashed = [named([p.label for p in self.points.points(e.process)])[e.index - 1] for e in self.points.crashes()]
        saves = sum(1 for e in self.points.events if e.kind == "save")
        return ScenarioResult(self.id, self.setup.variant.slug, self.crashes, tuple(crashed),
                              self.outcome(baseline_calls), len(self.points.points()), saves, self.choices)


@dataclass(frozen=True)
class ScenarioResult:
    """The part of a run the sweep keeps: its ID, where it crashed, and its outcome."""

    id: str
    variant: str
    crashes: tuple[int, ...]
    points: tuple[str, ...]  # each crash's point, as label#occurrence in its process
    outcome: Outcome
    hits: int  # crash points passed, over all processes
    saves: int  # checkpoint saves begun, over all processes
    choices: tuple[Choice, ...] = ()  # under a fault that chooses: the state each crash left


def check_death(points: Recorder, returned: bool, stuck: str | None = None) -> None:
    """The process died where it was told and did nothing after, or it was not told to die, or it was stuck."""
    where = f"{points.scenario}: process {points.process}"
    if points.violations:
        raise HarnessError(points.violations[0])
    if stuck is not None:
        if points.process <= len(points.crash_at):
            raise HarnessError(f"{where} could not start, so it cannot crash at its point "
                               f"{points.crash_at[points.process - 1]}: {stuck}")
        if points.passed:
            raise HarnessError(f"{where} read an unreadable checkpoint after {points.passed} crash points: {stuck}")
        return
    if points.dead is None and not returned:
        raise HarnessError(f"{where} raised Crash without reaching a crash point of its own")
    if points.dead is not None and returned:
        raise HarnessError(
            f"{where} died at its point {points.dead.index} ({points.dead.label}) but its loop returned: "
            "it caught its own Crash (a bare except, or except BaseException)"
        )
    if points.dead is None and points.process <= len(points.crash_at):
        raise Stray(
            f"{where} finished after {points.passed} crash points and never reached its crash point "
            f"{points.crash_at[points.process - 1]}"
        )


def check_finished(points: Recorder, store: Store) -> Checkpoint:
    """The finished checkpoint the last process left durable; anything else fails the scenario."""
    final = store.read()
    if final is None or not final.finished:
        found = final.summary() if final else "nothing"
        raise HarnessError(
            f"{points.scenario}: process {points.process} returned, but the run is not finished "
            f"(the durable checkpoint: {found})"
        )
    return final


def check_once(run: ScenarioRun) -> None:
    """The uninterrupted run, with nothing broken, makes each intended effect exactly once and nothing else:
    a loop that does not (an empty loop, a misspelt effect, an effect made twice) has no table to count against."""
    if isinstance(run.setup.variant.entry, Program) and run.setup.job.calls and not run.world.model.calls:
        raise BadInput(f"{run.setup.variant.slug}: its uninterrupted run never asked crashlab's model, which plays job "
                       f"{run.setup.job.name}: point its client at OPENAI_BASE_URL (or ANTHROPIC_BASE_URL), as the "
                       "official SDKs do, or sweep it without --job")
    outcome = run.outcome(run.world.model.calls)
    # An effect whose request the receiver's idempotency contract refused (no key where one is required) is the
    # loop's to lose: the table counts it missing, as it is under that contract.
    refused = {intended_call(e.detail["call"]) for e in run.points.events
               if e.kind == "refused" and e.detail.get("contract")}
    wrong = [f"{effect} {n + 1} times" for effect, n in outcome.dups.items()]
    wrong += [f"{effect} not at all" for effect in outcome.missing if effect not in refused]
    if outcome.orphans:
        named = {c.id for c in run.setup.variant.intended(run.setup.job)}
        strays = sorted({r.call for r in run.world.tracker.records if r.call not in named})
        wrong.append(f"records for {', '.join(strays)}, which is no intended effect")
    if wrong:
        intended = run.setup.variant.intended(run.setup.job)
        expected = ", ".join(c.id for c in intended)
        nothing = len(outcome.missing) == len(intended) and not outcome.orphans and run.setup.variant.calls_service
        hint = ": does it call crashlab's service at the URL in CRASHLAB_TRACKER_URL?" if nothing else ""
        raise BadInput(f"{run.setup.variant.slug}: its uninterrupted run must make each intended effect ({expected}) "
                       f"exactly once, and it made {'; '.join(wrong)}{hint}")
    if not run.points.points(1):
        raise BadInput(f"{run.setup.variant.slug}: its uninterrupted run passes no crash point, so a sweep has "
                       "nowhere to crash it: mark where it can die with crashlab.point(label)")


def check_retrace(run: ScenarioRun, process: int, expected: Trace, of: str) -> None:
    """A process repeats what it repeats: up to its crash, its points and requests are those of the run it
    retraces. The points are compared first, so an error names the first point that differs, if one does; then
    it says what to do about it."""
    got = run.trace(process)
    strayed = departure(got, expected, of)
    if strayed is not None:
        raise Stray(f"{run.id}: the loop is not deterministic: process {process} {strayed}; "
                    f"{advice(run.setup.variant, got, expected)}")


def advice(variant: Variant, got: Trace, expected: Trace) -> str:
    """What to do about a loop whose two runs part ways: where they did the same things in another order, let the
    harness decide the order of its threads; else, find what it reads that differs from run to run."""
    n = min(len(got), len(expected))
    reordered = Counter(map(_what, got[:n])) == Counter(map(_what, expected[:n]))  # answers aside: issue numbers move
    if reordered and variant.table == "loop" and not variant.scheduled:
        return ("the two runs did the same things in another order, as a loop does that runs its tool calls at once "
                "(a thread pool, asyncio.to_thread, a parallel tool node): sweep it with --scheduled "
                "(scheduled=True in the API), and crashlab decides the order, and with --fault interleave tries others")
    if reordered:
        return "the two runs did the same things in another order: their threads raced where the harness does not see"
    return ("a loop must do the same each time it runs the same job from the same state: look for what it reads that "
            "changes from run to run (a clock, a random number, a cache or a file outside its run directory)")


def departure(got: Trace, expected: Trace, of: str) -> str | None:
    """Where `got` departs from `expected`, said as the end of a sentence about the process that did `got`; None
    if it is `expected`'s beginning. The points are compared first: the first point that differs, if one does."""
    if got == expected[: len(got)]:
        return None
    crashes = [step for step in got if step.kind == "point"]
    points = [step for step in expected if step.kind == "point"][: len(crashes)]
    if crashes != points:
        k = _first_difference(crashes, points)
        return f"passed {_point(crashes, k)} at its point {k + 1}, where {of} passed {_point(points, k)}"
    k = _first_difference(got, expected)
    after = sum(1 for step in got[:k] if step.kind == "point")
    return f"sent {_request(got, k)} after its point {after}, where {of} sent {_request(expected, k)}"


def _what(step: Step) -> tuple[str, str, Any]:
    """A step by what it is: a point's label, a request's tool and call (not what was answered)."""
    return step.kind, step.label, dict(step.said).get("call")


def _first_difference(got: Trace, expected: Trace) -> int:
    return next((k for k, (a, b) in enumerate(zip(got, expected, strict=False)) if a != b),
                min(len(got), len(expected)))


def _point(points: Trace, k: int) -> str:
    """The k-th of `points`, as ``label#occurrence (where)``."""
    if k >= len(points):
        return "nothing more"
    occurrence = sum(1 for step in points[: k + 1] if step.label == points[k].label)
    return f"{points[k].label}#{occurrence} ({points[k].where})"


def _request(trace: Trace, k: int) -> str:
    return str(trace[k]) if k < len(trace) and trace[k].kind != "point" else "nothing more"
