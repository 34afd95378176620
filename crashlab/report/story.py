"""One scenario's story, told from its recorded events: what each process did, found and lost.

Everything here is read back from the recorder of a real run, in process or forked. Walking the
events in order, the story keeps track of what is durable (a checkpoint becomes durable at its
``renamed`` point) and what the tracker holds (one record per applied request), so each crash point
can say what a restart at that moment would find. A scenario is found by its ID alone: the faults
it ran under are part of it.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from crashlab.durable.checkpoint import Checkpoint, CheckpointError
from crashlab.job import Job, intended
from crashlab.protocols.fault import Faults
from crashlab.protocols.points import Event
from crashlab.protocols.run import Program
from crashlab.protocols.scenario import EFFECTS, ScenarioError, ScenarioRun, Setup, parse_scenario_id
from crashlab.protocols.variant import Variant
from crashlab.runners import RunnerSpec
from crashlab.world import KEY_RETENTION, Record


def find_scenario(scenario_id: str, job: Job, variants: Mapping[str, Variant]) -> tuple[ScenarioRun, int]:
    """Run the scenario an ID names, after checking that this job has it: each crash point in range.

    It runs where its variant can run (in process, or forked for a loop that only runs for real);
    with it, the model calls of the uninterrupted run, which its verdict counts extra calls against.
    """
    runs, calls = find_repeats(scenario_id, job, variants, 1)
    return runs[0], calls


def find_repeats(scenario_id: str, job: Job, variants: Mapping[str, Variant],
                 repeat: int) -> tuple[list[ScenarioRun], int]:
    """`find_scenario`, run `repeat` times: a flaky scenario shows what each of its ways comes to."""
    parsed = parse_scenario_id(scenario_id, variants)
    variant = parsed.variant
    if reason := variant.cannot_run(job):
        raise ScenarioError(reason)
    setup = Setup(variant, job, parsed.faults, parsed.profile)
    spec = RunnerSpec("in-process" if "in-process" in variant.runners else "forked")
    spec.check(setup)
    crashes, choices = parsed.crashes, parsed.choices
    with spec.open() as runner:
        baseline = runner.scenario(Setup(variant, job, profile=parsed.profile), ())
        for k, point in enumerate(crashes):
            reached = runner.scenario(setup, crashes[:k], choices[:k]).passed(k + 1)
            if not 1 <= point <= reached:
                if k == 0:
                    raise ScenarioError(f"{variant.slug} passes crash points 1..{reached} on job {job.name}: "
                                        f"no point {point}")
                valid = f"points 1..{reached}" if reached else "no points (the run was already finished)"
                raise ScenarioError(f"the restart of {setup.id(crashes[:k], choices[:k])} on job {job.name} "
                                    f"reaches {valid}: no point {point}")
        runs = [runner.scenario(setup, crashes, choices) for _ in range(repeat)]
    for fault in parsed.faults.members:
        if not fault.acted(runs[0]):
            raise ScenarioError(f"{scenario_id} on job {job.name}: its {fault.slug} fault never acted in it "
                                f"({fault.tag} names more than the scenario reaches)")
    return runs, baseline.world.model.calls


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


def point_rows(run: ScenarioRun, kept: list[str | None] | None = None) -> list[dict[str, Any]]:
    """Each crash point of process 1, where it falls, and what is durable when it is reached: crashlab's
    checkpoint, or for a loop that keeps files of its own (a runtime), `kept`, what its run directory held
    there (None where nothing copied it)."""
    replay, seen = Replay(run.world.tracker.records), Counter[str]()
    rows: list[dict[str, Any]] = []
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
                "checkpoint": summary(replay.durable) if kept is None else kept[len(rows)],
                "tracker": replay.tracker(),
            })
    return rows


def files_summary(files: Iterable[tuple[str, int]]) -> str:
    """A run directory's files as one line: each file's path and size (in bytes)."""
    return ", ".join(f"{name} {size(n)}" for name, n in files) or "no file"


def size(n: int) -> str:
    """A file's size as people read it."""
    return f"{n} B" if n < 1024 else f"{n / 1024:.0f} KiB" if n < 1024 * 1024 else f"{n / 1024 / 1024:.1f} MiB"


#: Notes that say what the next crash point means; they are printed on that point's line.
ATTACHED = {"save", "request", "model", "task"}


def note(event: Event, faults: Faults = Faults()) -> str:
    """What a noted event did, as a person reads it: one of a fault's own as the fault tells it."""
    if (said := faults.note(event)) is not None:
        return said
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
            kept = d.get("kept", KEY_RETENTION)
            return (f"{event.label} {d['call']} ({sent}): the tracker has FORGOTTEN the key "
                    f"(kept {kept:g} h), APPLIES it again, #{d['answer']}")
        if d["applied"]:
            return f"{event.label} {d['call']} ({sent}): the tracker APPLIES it, #{d['answer']}"
        return f"{event.label} {d['call']} ({sent}): the tracker knows the key, answers #{d['answer']}, changes nothing"
    if event.kind == "task":
        sent = f"key {d['key'][:12]}…" if d["key"] else "no key"
        said = f"{event.label} {d['call']} ({sent})"
        if d.get("known"):
            return f"{said}: the service knows the key, answers task {d['task']}, makes nothing"
        return f"{said}: the service MAKES task {d['task']}, durable before its handle leaves"
    if event.kind == "decision":
        return f"{d['call']} has a marker and no result: the ladder says {event.label.upper()}, {d['why']}"
    if event.kind == "ask":
        answer = f"yes, #{d['answer']}" if d["answer"] is not None else "no"
        wrong = " (WRONG: the tracker says otherwise)" if d["answer"] != d["truth"] else ""
        return f"ASKS THE PERSON: {d['question']} → {answer}{wrong}"
    if event.kind == "lookup":
        answer = f"yes, it returned #{d['answer']}" if d["answer"] is not None else "no such request"
        fenced = "; the tracker FENCES the key: a request under it will be refused" if d.get("fenced") else ""
        return f"asks the tracker: did the request with key {d['key'][:12]}… happen? → {answer}{fenced}"
    if event.kind == "approval-request":
        return f"{d['call']} waits at the approval desk: the person is deciding"
    if event.kind == "approval":
        decided = "approved" if d["approved"] else "refused"
        how = "the person decides" if d["decided_now"] else "the desk remembers the decision by key, asks nobody"
        return f"approval desk: {d['call']} {decided} ({how})"
    if event.kind == "refused":
        return f"the tracker REFUSES {event.label}: {d.get('status')}"
    if event.kind == "failed":
        return f"the process FAILS: {event.label}"
    if event.kind == "transport-error":
        return f"the {event.label} server DIES after handling {d['call']}: the outcome is unknown"
    if event.kind == "retry":
        return f"{d['call']}: {d['why']}"
    return f"{event.kind} {event.label}"


#: Events a story tells elsewhere: what a process found, in its heading; what it printed, after its end.
UNTOLD = {"load", "found", "printed"}


def lines(events: list[Event], faults: Faults = Faults(), verbose: bool = False) -> list[str]:
    """A process's events: one line per crash point, with the note that explains it."""
    out, held = [], []
    for event in events:
        if event.kind in UNTOLD or (event.kind == "schedule" and not verbose):
            continue
        if event.kind in ATTACHED:
            held.append(note(event, faults))
        elif event.kind == "point":
            if event.label == "renamed":  # durable for a process crash; a fault that cuts the power says how far
                held.append(faults.note(event) or "now durable")
            out.append(f"{event.index:>4}  {event.label:<15} {'; '.join(held)}".rstrip())
            held = []
        elif event.kind == "crash":
            out.append(f"  ✗✗  CRASH at point {event.index} ({event.label}): process {event.process} dies here")
        else:
            out.append(f"      ▶ {note(event, faults)}")
    return out


def why(run: ScenarioRun) -> list[str]:
    """For each intended effect sent more than once: who sent it, and what the tracker did with it."""
    out = []
    for call in run.setup.variant.intended(run.setup.job):
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


@dataclass
class Life:
    """One process, as a story tells it: what it found on disk (crashlab's checkpoint it loaded, or the files the
    runner saw in its run directory, `noted`), the tracker's records as it started, the model calls paid before it
    (None where nothing counts them), how it ended and the records it made, each with its key."""

    found: str
    noted: bool
    held: list[str]
    model_calls: int | None
    ended: str
    made: list[str]
    printed: dict[str, dict[str, Any]]  # stdout and stderr, as the runner kept them: bytes, and the last lines

    def resumed_from(self) -> str:
        """All it found, as a restart's resume condition would test it: on disk, then in the tracker."""
        return f"{self.found} on disk" + (f" and {', '.join(self.held)} in the tracker" if self.held else "")


def lives(run: ScenarioRun) -> list[Life]:
    """Each process's life, read off the scenario's events: an applied request made the tracker's next record (the
    order `Replay` relies on too), so a process holds the records made before it and made those of its requests."""
    records, taken = run.world.tracker.records, run.world.earlier
    counted = any(e.kind == "model" for e in run.points.events)
    out: list[Life] = []
    for process in range(1, run.points.process + 1):
        events = [e for e in run.points.events if e.process == process]
        loads = [e for e in events if e.kind == "load"]
        files = next((e.detail["files"] for e in events if e.kind == "found"), None)
        found = summary(loads[0].detail["data"]) if loads else \
            files_summary(files) if files is not None else "what it keeps itself"
        paid = sum(1 for e in run.points.events if e.kind == "model" and e.process < process) if counted else None
        held = [describe(r) for r in records[:taken]]
        made = []
        for e in events:
            if e.kind in ("request", "late") and e.detail["applied"] and taken < len(records):
                key = f"under key {e.detail['key']}" if e.detail.get("key") else "with no key"
                late = f", landing late from process {process - 1}" if e.kind == "late" else ""
                made.append(f"{describe(records[taken])} {key}{late}")
                taken += 1
        printed = {e.label: e.detail for e in events if e.kind == "printed"}
        out.append(Life(found, files is not None, held, paid,
                        ended(events, run.stuck if process == run.points.process else None), made, printed))
    return out


def ended(events: list[Event], stuck: str | None) -> str:
    """How a process ended: killed at its point, failed (stuck), or returned, which the runner takes only with
    exit status 0."""
    crash = next((e for e in events if e.kind == "crash"), None)
    if crash is not None:
        return f"killed at its point {crash.index} ({crash.label})"
    if stuck is not None:
        return f"failed: {stuck}"
    return "exit status 0: the loop returned"


def diagnoses(run: ScenarioRun, baseline_calls: int) -> list[str]:
    """Advice, one line each, where the scenario's events show a pattern with a known cause and a known remedy."""
    found = [idle_restart(run, run.outcome(baseline_calls).missing), no_retry(run), service_points_only(run)]
    return [advice for advice in found if advice is not None]


def idle_restart(run: ScenarioRun, missing: Sequence[str]) -> str | None:
    """The last process, a restart, returned without sending anything while effects are missing: what it found
    convinced it the work was done, so the test it resumes by tests the wrong thing."""
    last = run.points.process
    events = [e for e in run.points.events if e.process == last]
    if last < 2 or not missing or run.stuck or any(e.kind in EFFECTS and e.label != "search" for e in events):
        return None
    are = "is" if len(missing) == 1 else "are"
    return (f"check the loop's resume condition: it found {lives(run)[-1].resumed_from()} and did nothing (process "
            f"{last}), while "
            f"{', '.join(missing)} {are} missing")


def no_retry(run: ScenarioRun) -> str | None:
    """The last process got no reply to a request, never sent it again and failed: a client with no retry policy
    turns a lost reply into a stuck run."""
    if run.stuck is None:
        return None
    last = run.points.process
    events = [e for e in run.points.events if e.process == last]
    for k, e in enumerate(events):
        if e.kind == "no-reply" and not any(later.kind == "request" and later.detail.get("call") == e.detail["call"]
                                            for later in events[k + 1:]):
            return (f"the loop's client does not retry: process {last} got no reply in time to {e.label} "
                    f"{e.detail['call']}, sent it no more and failed; resend a request that gets no reply, under "
                    "the same key")
    return None


def service_points_only(run: ScenarioRun) -> str | None:
    """Every crash point the scenario passed was the service's: the loop has none of its own, so a sweep never
    kills it between its own steps (after it saves its progress, say), where its mistakes would show."""
    passed = run.points.points()
    if not passed or not all(p.detail.get("service") for p in passed):
        return None
    labels = ", ".join(dict.fromkeys(p.label for p in passed))
    if isinstance(run.setup.variant.entry, Program) and run.setup.variant.fs_points:
        return (f"crashlab sees this program only at its service's points ({labels}): it wrote, synced, "
                "renamed and unlinked no file in its run directory, so no death falls between its own steps")
    if isinstance(run.setup.variant.entry, Program):  # a program imports nothing of crashlab's to mark points with
        return (f"crashlab sees this program only at its service's points ({labels}): sweep it with --fs-points, "
                "and each fsync, fdatasync, rename, unlink and close after a write in its run directory is a crash "
                "point too, so a death between its own steps (after it saves its progress, say) is swept")
    return (f"crashlab sees this loop only at its service's points ({labels}): mark where it can die with "
            "crashlab.point(label) (after each save of its progress, say), and a sweep kills it there too")


def verdict(run: ScenarioRun, baseline_calls: int) -> dict[str, Any]:
    outcome = run.outcome(baseline_calls)
    earlier = run.world.tracker.records[: run.world.earlier]
    return {
        "earlier": [describe(r) for r in earlier],
        "tracker": [describe(r) for r in run.world.tracker.records[len(earlier):]],
        "expected": [c.id for c in run.setup.variant.intended(run.setup.job)],
        "duplicates": outcome.dups,
        "missing": list(outcome.missing),
        "wrong": list(outcome.wrong),
        "orphans": outcome.orphans,
        "asks": outcome.asks,
        "approvals": outcome.approvals,
        "calls_plus": outcome.calls_plus,
        "stuck": run.stuck,
        "why": why(run),
    }


def flakiness(runs: Sequence[ScenarioRun], baseline_calls: int) -> dict[str, Any] | None:
    """How the repeats of one scenario disagreed, or None if they agree in what they did and came to: each
    outcome they came to, with how many came to it and the verdict of the first that did."""
    outcomes = [run.outcome(baseline_calls) for run in runs]
    did_differ = any(run.traces() != runs[0].traces() for run in runs[1:])
    if not did_differ and all(o == outcomes[0] for o in outcomes):
        return None
    ways: list[tuple[ScenarioRun, int]] = []
    for run, outcome in zip(runs, outcomes, strict=True):
        k = next((k for k, (way, _) in enumerate(ways) if way.outcome(baseline_calls) == outcome), None)
        if k is None:
            ways.append((run, 1))
        else:
            ways[k] = (ways[k][0], ways[k][1] + 1)
    return {"repeats": len(runs), "did_differ": did_differ,
            "outcomes": [{"times": times, "verdict": verdict(run, baseline_calls)} for run, times in ways]}


def story(run: ScenarioRun, baseline_calls: int, repeats: Sequence[ScenarioRun] = (),
          verbose: bool = False) -> dict[str, Any]:
    """The scenario as data: its processes' events, rendered, and the verdict; with `repeats` (every run of
    it, `run` first), how they disagreed, if they did (`flaky`): every outcome they came to. `verbose` keeps the
    scheduler's decisions, a line each, which drown the story of a loop whose threads crashlab schedules."""
    setup, processes = run.setup, []
    for process, life in enumerate(lives(run), start=1):
        events = [e for e in run.points.events if e.process == process]
        loads = [e for e in events if e.kind == "load"]
        found = loads[0].detail["data"] if loads else None
        told = lines(events, setup.faults, verbose)
        if process == run.points.process and run.stuck:
            why = "it cannot read its checkpoint, and will not start afresh" if run.setup.variant.keeps_checkpoint \
                else "it cannot go on in the world its deaths left"
            told.append(f"      STUCK: {why}: {run.stuck}")
        elif found is not None and Checkpoint.from_json(found).finished:
            told.append("      the run is finished: the process exits at once")
        left = run.left[process - 2] if 2 <= process <= len(run.left) + 1 else None
        seen = life.noted  # a loop that keeps no checkpoint of crashlab's: told as the runner saw it from outside
        processes.append({"process": process, "found": life.found, "left": left, "events": told,
                          "held": life.held if seen else None, "model_calls": life.model_calls if seen else None,
                          "ended": life.ended if seen else None, "made": life.made if seen else None,
                          "printed": life.printed})
    return {
        "id": run.id,
        "variant": setup.variant.slug,
        "name": setup.variant.name,
        "job": setup.job.source,
        "crashes": [
            {"process": e.process, "index": e.index, "label": e.label, "where": str(e.where)}
            for e in run.points.crashes()
        ],
        "processes": processes,
        "verdict": verdict(run, baseline_calls),
        "advice": diagnoses(run, baseline_calls),
        "flaky": flakiness(repeats, baseline_calls) if len(repeats) > 1 else None,
    }


def render(told: dict[str, Any]) -> str:
    """The story for a terminal: process by process, the crash marked, the verdict last."""
    out = [f"scenario {told['id']}: {told['name']}, job {told['job']}"]
    if earlier := told["verdict"]["earlier"]:
        out.append(f"  before it, an earlier run of the job, under the run ID it starts with, made "
                   f"{', '.join(earlier)}")
    for crash in told["crashes"]:
        out.append(f"  process {crash['process']} crashes at its point {crash['index']} ({crash['label']}, "
                   f"{crash['where']})")
    for process in told["processes"]:
        role = "first run" if process["process"] == 1 else "restart"
        out += ["", f"── process {process['process']} ({role}) found on disk: {process['found']}"]
        if process["left"]:
            out.append(f"      {process['left']}")
        if process["held"] is not None:
            paid = "" if process["model_calls"] is None else f"; model calls paid before it: {process['model_calls']}"
            out.append(f"      tracker held: {', '.join(process['held']) or 'nothing'}{paid}")
        out += process["events"]
        if process["ended"] is not None:
            out += [f"      ended: {process['ended']}", f"      made: {', '.join(process['made']) or 'nothing'}"]
        for stream, printed in process.get("printed", {}).items():
            last = printed["last"]
            out.append(f"      printed on {stream}: {printed['bytes']:,} bytes"
                       + (f"; its last {len(last)} lines:" if len(last) > 1 else ", its last line:" if last else ""))
            out += [f"        | {line}" for line in last]
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
        *(["", *(f"advice: {advice}" for advice in told["advice"])] if told["advice"] else []),
    ]
    if flaky := told.get("flaky"):
        n, ways = flaky["repeats"], flaky["outcomes"]
        if len(ways) == 1:
            out += ["", f"flaky: its {n} repeats did different things (their crash points or requests differ), and "
                        "all came to the verdict above"]
        else:
            did = "did different things and " if flaky["did_differ"] else ""
            out += ["", f"flaky: its {n} repeats {did}came to {len(ways)} outcomes (the story above is the first's):",
                    *(f"  {way['times']} of {n}: {brief(way['verdict'])}" for way in ways)]
    return "\n".join(out)


def brief(v: dict[str, Any]) -> str:
    """A verdict in one line: what a flaky scenario's repeats came to, side by side."""
    dups = ", ".join(f"{call} ×{extra + 1}" for call, extra in v["duplicates"].items())
    parts = [f"duplicates {dups or 'none'}", f"missing {', '.join(v['missing']) or 'none'}"]
    parts += [f"wrong {', '.join(v['wrong'])}"] if v["wrong"] else []
    parts += [f"orphans {v['orphans']}"] if v["orphans"] else []
    parts += ["stuck"] if v["stuck"] else []
    return "; ".join([*parts, f"asks {v['asks']}, extra model calls {v['calls_plus']}"])
