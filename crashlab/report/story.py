"""One scenario's story, told from its recorded events: what each process did, found and lost.

Everything here is read back from the recorder of a real run. Walking the events in order, the
story keeps track of what is durable (a checkpoint becomes durable at its ``renamed`` point) and
what the tracker holds (one record per applied request), so each crash point can say what a
restart at that moment would find.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from typing import Any

from crashlab.durable.checkpoint import Checkpoint, CheckpointError
from crashlab.engine.points import Event
from crashlab.engine.sweep import (
    VARIANTS,
    Faults,
    NoSuchChoice,
    ScenarioRun,
    StoreFactory,
    Variant,
    memory_stores,
    run_scenario,
)
from crashlab.engine.sweep import scenario_id as id_of  # find_scenario's argument is the ID itself
from crashlab.faults import CHOOSING, faults_of
from crashlab.job import Job, shown
from crashlab.world import KEY_RETENTION, Record, intended

#: A scenario ID: a variant's slug, then one 1-based crash point per process that crashes, each
#: after a colon, in ASCII digits. The crashes are one repeated group, so IDs with more crashes
#: (``SLUG:I:J:K``) or a suffix after them (a fault choice, ``SLUG:I~2``) extend the grammar without
#: a new parser; MAX_CRASHES is far deeper than any sweep goes, and only keeps a pasted ID from running
#: for ever. A sign is allowed by the grammar so that
#: ``keys:-1`` is answered "out of range", not "malformed".
SCENARIO_ID = re.compile(r"(?P<slug>[a-z][a-z0-9-]*)(?P<crashes>(?::-?[0-9]+(?:~[0-9]{1,9})?)+)")
MAX_CRASHES = 100
#: More digits than this name no crash point of any job a job file can hold.
MAX_POINT_DIGITS = 9


class ScenarioError(ValueError):
    """A scenario ID that names no scenario of this job; the message gives the valid choices."""


@dataclass(frozen=True)
class ScenarioId:
    """A parsed scenario ID: which variant, and where each crashing process dies."""

    slug: str
    crashes: tuple[int, ...]
    wrong_at: int = 0  # the fault wrong-answer: the question answered wrong (a final ``~K``)
    choices: tuple[int, ...] = ()  # a fault that chooses: the state each crash left (``I~S``)


def parse_scenario_id(text: str, fault: str = "crash") -> ScenarioId:
    """Parse `text` as a whole (`fullmatch`: no trailing newline, ASCII digits only).

    Under a fault that chooses (power-cut, expired-key, late-delivery) every crash carries its choice,
    ``I~S``; otherwise a final ``~K`` is the question answered wrong (wrong-answer's IDs, which explain
    tells under the crash fault too). A late delivery lands in the restart of a scenario's one crash.
    """
    match = SCENARIO_ID.fullmatch(text)
    if not match:
        raise ScenarioError(f"malformed scenario ID {shown(text)} (expected SLUG:I, SLUG:I:J and so on, in "
                            f"ASCII digits, e.g. after-reply:7; SLUG is one of {', '.join(VARIANTS)})")
    variant = find_variant(match["slug"])
    crashes = [part.split("~") for part in match["crashes"][1:].split(":")]
    if len(crashes) > MAX_CRASHES:
        raise ScenarioError(f"scenario {shown(text)} crashes {len(crashes)} processes: at most {MAX_CRASHES}")
    numbers, choices = [c[0] for c in crashes], [int(c[1]) if len(c) > 1 else None for c in crashes]
    for number in numbers:
        if len(number.lstrip("-")) > MAX_POINT_DIGITS:
            raise ScenarioError(f"{variant.slug}: crash point {shown(number)} is out of range for any job")
    if 0 in choices:
        raise ScenarioError(f"scenario {shown(text)}: a ~ choice is counted from 1 (~1, ~2, ...)")
    if fault in CHOOSING:
        if None in choices:
            example = "agent-lookup:9~3" if fault == "late-delivery" else "keys-markers:12~2, keys-markers:12~1:3~2"
            raise ScenarioError(f"scenario {shown(text)}: under --fault {fault} every crash names {CHOOSING[fault]}, "
                                f"I~S (e.g. {example})")
        if fault == "late-delivery" and len(crashes) > 1:
            raise ScenarioError(f"scenario {shown(text)}: under --fault late-delivery a scenario crashes once, at a "
                                "request in flight, and names where it lands in the restart: SLUG:I~K")
        return ScenarioId(variant.slug, tuple(map(int, numbers)), choices=tuple(choices))
    if any(choices[:-1]):
        raise ScenarioError(f"scenario {shown(text)}: only the crashes of a fault that chooses each carry ~S; "
                            f"use --fault {' or --fault '.join(CHOOSING)}")
    if choices[-1] and fault not in ("crash", "wrong-answer"):
        raise ScenarioError(f"scenario {shown(text)}: a final ~K is the question answered wrong, and --fault {fault} "
                            "answers none wrong; use --fault wrong-answer")
    return ScenarioId(variant.slug, tuple(map(int, numbers)), choices[-1] or 0)


def find_variant(slug: str) -> Variant:
    if slug not in VARIANTS:
        raise ScenarioError(f"unknown variant {shown(slug)} (valid: {', '.join(VARIANTS)})")
    return VARIANTS[slug]


def find_scenario(scenario_id: str, job: Job, fault: str = "crash", sync: str = "none", drift: str = "ids",
                  commit: str = "ack-first") -> ScenarioRun:
    """Run the scenario an ID names, after checking that this job has it: each crash point in range.

    A power cut's scenario runs on a store that syncs as `sync` says, a drifting model's as `drift`
    says, a crashing tracker's as `commit` says.
    """
    chosen = f" under --sync {sync}" if fault == "power-cut" else ""
    parsed = parse_scenario_id(scenario_id, fault)
    variant, store = VARIANTS[parsed.slug], memory_stores(sync)
    if reason := variant.refuses(job):
        raise ScenarioError(reason)
    crashes, choices = parsed.crashes, parsed.choices
    try:
        return _checked(variant, job, crashes, store, faults_of(fault, parsed.wrong_at, drift, commit), choices)
    except NoSuchChoice as error:
        raise ScenarioError(f"{error}{chosen}") from None


def _checked(variant: Variant, job: Job, crashes: tuple[int, ...], store: StoreFactory, faults: Faults,
             choices: tuple[int, ...]) -> ScenarioRun:
    wrong_at = faults.wrong_at
    for k, point in enumerate(crashes):
        reached = run_scenario(variant, job, crashes[:k], store, faults, choices[:k]).passed(k + 1)
        if not 1 <= point <= reached:
            if k == 0:
                raise ScenarioError(f"{variant.slug} passes crash points 1..{reached} on job {job.name}: no point {point}")
            valid = f"points 1..{reached}" if reached else "no points (the run was already finished)"
            before = id_of(variant.slug, crashes[:k], choices=choices[:k])
            raise ScenarioError(f"the restart of {before} on job {job.name} reaches {valid}: no point {point}")
    run = run_scenario(variant, job, crashes, store, faults, choices)
    if run.world.person.asks < wrong_at:
        asked = id_of(variant.slug, crashes)
        raise ScenarioError(f"{asked} on job {job.name} asks the person {run.world.person.asks} question(s), "
                            f"with that answer wrong too: no question {wrong_at}")
    return run


def describe(record: Record) -> str:
    if record.kind == "issue":
        return f"issue #{record.number} ({record.call})"
    return f"comment #{record.number} on #{record.issue} ({record.call})"


def summary(data: bytes | None) -> str:
    """A saved checkpoint's one-line picture, from the bytes the store kept."""
    if data is None:
        return "nothing"
    try:
        return Checkpoint.from_json(data).summary()
    except CheckpointError:
        return f"an unreadable checkpoint ({len(data)} bytes)"


@dataclass
class Replay:
    """What is durable as the events go by: the store's checkpoint and the tracker's records."""

    records: list[Record]
    durable: bytes | None = None
    writing: bytes | None = None
    applied: int = 0

    def step(self, event: Event) -> None:
        if event.kind == "save":
            self.writing = event.detail["data"]
        elif event.kind == "point" and event.label == "renamed":
            self.durable = self.writing
        elif event.kind in ("request", "late") and event.detail["applied"]:
            self.applied += 1

    def tracker(self) -> list[str]:
        return [describe(r) for r in self.records[: self.applied]]


def point_rows(run: ScenarioRun) -> list[dict[str, Any]]:
    """Each crash point of process 1, where it falls, and what is durable when it is reached."""
    replay, seen, rows = Replay(run.world.tracker.records), Counter(), []
    for event in run.points.events:
        replay.step(event)
        if event.kind == "point" and event.process == 1:
            seen[event.label] += 1
            rows.append({
                "index": event.index,
                "label": event.label,
                "occurrence": seen[event.label],
                "turn": event.where.turn,
                "call": event.where.call,
                "tool": event.where.tool,
                "where": str(event.where),
                "checkpoint": summary(replay.durable),
                "tracker": replay.tracker(),
            })
    return rows


#: Notes that say what the next crash point means; they are printed on that point's line.
ATTACHED = {"save", "request", "model"}


def note(event: Event) -> str:
    """What a noted event did, as a person reads it."""
    d = event.detail
    if event.kind == "model":
        return f"model call {d['call_count']}, {event.where}: replies {d['reply']}"
    if event.kind == "save":
        return f"writes {summary(d['data'])}"
    if event.kind == "request":
        if event.label == "search":
            return f"search {d['call']} → issues {d['answer']} (read only)"
        sent = f"key {d['key'][:12]}…" if d["key"] else "no key"
        if d["applied"] and d.get("forgot"):
            return (f"{event.label} {d['call']} ({sent}): the tracker has FORGOTTEN the key "
                    f"(kept {KEY_RETENTION:g} h), APPLIES it again, #{d['answer']}")
        if d["applied"]:
            return f"{event.label} {d['call']} ({sent}): the tracker APPLIES it, #{d['answer']}"
        return f"{event.label} {d['call']} ({sent}): the tracker knows the key, answers #{d['answer']}, changes nothing"
    if event.kind == "decision":
        return f"{d['call']} has a marker and no result: the ladder says {event.label.upper()}, {d['why']}"
    if event.kind == "ask":
        answer = f"yes, #{d['answer']}" if d["answer"] is not None else "no"
        wrong = " (WRONG: the fault wrong-answer)" if d["wrong"] else ""
        return f"ASKS THE PERSON: {d['question']} → {answer}{wrong}"
    if event.kind == "lookup":
        answer = f"yes, it returned #{d['answer']}" if d["answer"] is not None else "no such request"
        fenced = "; the tracker FENCES the key: a request under it will be refused" if d.get("fenced") else ""
        return f"asks the tracker: did the request with key {d['key'][:12]}… happen? → {answer}{fenced}"
    if event.kind == "late":
        sent = f"key {d['key'][:12]}…" if d["key"] else "no key"
        if d["fenced"]:
            done = "the tracker REFUSES it: a lookup fenced its key"
        elif d["applied"]:
            done = f"the tracker APPLIES it, #{d['answer']}"
        else:
            done = f"the tracker knows the key, #{d['answer']}, changes nothing"
        return f"LATE: the request of {d['call']} ({event.label}, {sent}) that the dead process sent lands now: {done}"
    if event.kind == "approval-request":
        return f"{d['call']} waits at the approval desk: the person is deciding"
    if event.kind == "approval":
        decided = "approved" if d["approved"] else "refused"
        how = "the person decides" if d["decided_now"] else "the desk remembers the decision by key, asks nobody"
        return f"approval desk: {d['call']} {decided} ({how})"
    if event.kind == "transport-error":
        return f"the {event.label} server DIES after handling {d['call']}: the outcome is unknown"
    return f"{event.kind} {event.label}"


def lines(events: list[Event]) -> list[str]:
    """A process's events: one line per crash point, with the note that explains it."""
    out, held = [], []
    for event in events:
        if event.kind in ATTACHED:
            held.append(note(event))
        elif event.kind == "point":
            if event.label == "renamed":
                held.append("now durable")
            out.append(f"{event.index:>4}  {event.label:<15} {'; '.join(held)}".rstrip())
            held = []
        elif event.kind == "crash":
            out.append(f"  ✗✗  CRASH at point {event.index} ({event.label}): process {event.process} dies here")
        elif event.kind != "load":
            out.append(f"      ▶ {note(event)}")
    return out


def why(run: ScenarioRun, job: Job) -> list[str]:
    """For each changing call sent more than once: who sent it, and what the tracker did with it."""
    out = []
    for call in job.changing_calls:
        sent = [e for e in run.points.events if e.kind in ("request", "late") and intended(e.detail["call"]) == call.id]
        if len(sent) < 2:
            continue
        applied = [e.process for e in sent if e.detail["applied"]]
        refused = sum(1 for e in sent if e.detail.get("fenced"))
        repeats = len(sent) - len(applied) - refused
        names = list(dict.fromkeys(e.detail["call"] for e in sent))
        named = f" as {', '.join(names)}" if len(names) > 1 else ""
        senders = ", ".join(f"{e.process - 1} (landing late)" if e.kind == "late" else str(e.process) for e in sent)
        text = f"{call.id} was sent {len(sent)} times{named} (by process {senders}): "
        text += f"the tracker applied it {len(applied)}×"
        if repeats:
            text += f" and answered {repeats} keyed repeat{'s' if repeats > 1 else ''} from its record"
        if refused:
            text += " and refused the late arrival, whose key a lookup had fenced"
        out.append(text)
    return out


def verdict(run: ScenarioRun, job: Job, baseline_calls: int) -> dict[str, Any]:
    outcome = run.outcome(job, baseline_calls)
    earlier = run.world.tracker.records[: run.world.earlier]
    return {
        "earlier": [describe(r) for r in earlier],
        "tracker": [describe(r) for r in run.world.tracker.records[len(earlier):]],
        "expected": [c.id for c in job.changing_calls],
        "duplicates": outcome.dups,
        "missing": list(outcome.missing),
        "wrong": list(outcome.wrong),
        "orphans": outcome.orphans,
        "asks": outcome.asks,
        "approvals": outcome.approvals,
        "calls_plus": outcome.calls_plus,
        "stuck": run.stuck,
        "why": why(run, job),
    }


def story(run: ScenarioRun, job: Job) -> dict[str, Any]:
    """The scenario as data: its processes' events, rendered, and the verdict."""
    baseline_calls = run_scenario(run.variant, job, (), memory_stores()).world.model.calls
    processes = []
    for process in range(1, run.points.process + 1):
        events = [e for e in run.points.events if e.process == process]
        found = events[0].detail["data"]
        told = lines(events)
        if process == run.points.process and run.stuck:
            told.append(f"      STUCK: it cannot read its checkpoint, and will not start afresh: {run.stuck}")
        elif found is not None and Checkpoint.from_json(found).finished:
            told.append("      the run is finished: the process exits at once")
        left = run.left[process - 2] if 2 <= process <= len(run.left) + 1 else None
        processes.append({"process": process, "found": summary(found), "left": left, "events": told})
    return {
        "id": run.id,
        "variant": run.variant.slug,
        "name": run.variant.name,
        "job": job.source,
        "crashes": [
            {"process": e.process, "index": e.index, "label": e.label, "where": str(e.where)}
            for e in run.points.crashes()
        ],
        "processes": processes,
        "verdict": verdict(run, job, baseline_calls),
    }


def render(told: dict[str, Any]) -> str:
    """The story for a terminal: process by process, the crash marked, the verdict last."""
    out = [f"scenario {told['id']}: {told['name']}, job {told['job']}"]
    if earlier := told["verdict"]["earlier"]:
        out.append(f"  before it, an earlier run of the job, under the run ID it starts with, made {', '.join(earlier)}")
    for crash in told["crashes"]:
        out.append(f"  process {crash['process']} crashes at its point {crash['index']} ({crash['label']}, {crash['where']})")
    for process in told["processes"]:
        role = "first run" if process["process"] == 1 else "restart"
        out += ["", f"── process {process['process']} ({role}) found on disk: {process['found']}"]
        if process["left"]:
            out.append(f"      {process['left']}")
        out += process["events"]
    v = told["verdict"]
    dups = ", ".join(f"{call} ×{extra + 1}" for call, extra in v["duplicates"].items())
    out += [
        "",
        "verdict",
        *([f"  earlier run:   {', '.join(v['earlier'])}, not counted"] if v["earlier"] else []),
        f"  tracker holds: {', '.join(v['tracker']) or 'nothing'}",
        f"  expected:      {', '.join(v['expected']) or 'nothing'}, once each",
        f"  duplicates:    {dups + ' (DUPLICATED)' if dups else 'none'}",
        f"  missing:       {', '.join(v['missing']) or 'none'}",
        *([f"  wrong:         {', '.join(v['wrong'])} (the saved result names a record the call did not make)"]
          if v["wrong"] else []),
        *([f"  stuck:         {v['stuck']}"] if v["stuck"] else []),
        *([f"  orphans:       {v['orphans']} (records of a call ID the run no longer has)"] if v["orphans"] else []),
        f"  asks: {v['asks']}   approvals: {v['approvals']}   extra model calls: {v['calls_plus']}",
        *(f"  why: {text}" for text in v["why"]),
    ]
    return "\n".join(out)
