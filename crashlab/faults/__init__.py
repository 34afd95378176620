"""Fault models: what can break beyond the chapter's crash, each swept as scenarios of its own.

The default, `crash`, is the chapter's: the loop's process dies at a crash point, and the OS cache,
the tracker and the person outlive it, the person never wrong. Each other fault adds one choice to a
scenario, and the choice is part of the scenario's ID, so `explain` can replay it.

`wrong-answer`: the person is the ladder's last rung, and a person can be wrong. For every question
a crash scenario puts to the person, the same scenario runs again with that one answer wrong: "no"
when the call did happen (the loop makes it again: a duplicate), "yes, #N" when it did not (the loop
believes it done: a missing effect, and a result that names a record the call never made). Its ID is
the crash scenario's with ``~K``: ``markers:12~1`` answers the first question wrong.

`power-cut`: each death is a power cut, and the disk keeps only what the store's syncs made durable
(`crashlab.durable.disk`). At each crash point the sweep takes every state of the checkpoint file the disk
allows, newest first, as scenarios of their own: ``keys-markers:12~2`` is the second state a cut at
point 12 allows (``~1`` is always what a process crash leaves). A restart that finds an empty or torn
file cannot read it: the scenario is `stuck` (the loop refuses it, never starting afresh silently).

`tracker-crash`: the tracker dies with the loop and restarts from what it made durable. How it
makes a request durable (`world.COMMITS`) brings its own crash points, which number among the
loop's: a tracker that answers before it commits loses the effect, one that commits the key after
the record loses the key, one that commits both before it answers loses nothing anyone heard of.

`reused-run-id`: before the scenario, an earlier run of the same job (yesterday's triage) ran to the
end under the run ID this one starts with, and the scripted model repeats its call IDs, so a loop
that reuses the run ID sends yesterday's keys. A keyed tracker answers them from yesterday's records:
today's effects are missing while the loop believes them done (and counts them `wrong`). The agent's
loop draws a fresh run ID per run. IDs are the crash sweep's; only today's records are counted.

`drifting-model`: a real model asked again for a turn does not repeat itself. A model that drifts
names the calls of a reply it gives again anew, ``A#2`` for A the second time (``--drift ids``), and
under ``--drift order`` also reverses them where no call of the reply refers to another. The IDs are
the crash sweep's; duplicates and missing effects are counted by the job's call each record stands
for, and a record filed under a name the run later replaced is an orphan too.

`expired-key`: the world has a clock, and a keyed tracker honours a key for 24 hours after it applied
it (`world.KEY_RETENTION`, Stripe's), then applies a repeat again; its records keep their keys, so a
lookup still finds them. A process takes no time; a restart comes a downtime after its death, and
each death is followed by each of the `DOWNTIMES`, a scenario each: ``keys-markers:12~2`` restarts
two days after a crash at point 12. A rerun after the key expired duplicates, unless the loop sees
that its marker is older than the key retention its tool declares and goes down the ladder.

`late-delivery`: a changing request spends time on the wire, at the crash point ``sent``, and a
death there leaves it in flight. It lands in the restart, at any of the restart's crash points or
after its last, each a scenario: ``agent-lookup:12~3`` lands at the third point of the restart of a
crash at point 12. Landing changes what the restart does from there on, so each is re-executed from
nothing, and the restart crashes no more. A tracker that answers lookups says "no" to a request not
yet landed and takes the resend and the late arrival both; one that fences the key on that "no"
refuses the late arrival, and a keyed tracker answers it from the resend's key.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from itertools import count

from crashlab.durable.disk import SYNCS
from crashlab.engine.sweep import (
    Faults,
    ScenarioResult,
    StoreFactory,
    Tally,
    Variant,
    VariantSweep,
    check_retrace,
    memory_stores,
    run_scenario,
    sweep_variant,
)
from crashlab.job import Job
from crashlab.world import COMMITS, DRIFTS

#: The downtimes before a restart under expired-key, in hours: ~1 an hour, well within the 24 a
#: keyed tracker keeps a key (`world.KEY_RETENTION`); ~2 two days, past it.
DOWNTIMES = (1.0, 48.0)
#: The faults whose every death leaves one of several states, and what an ID's ``I~S`` then names.
CHOOSING = {"power-cut": "the disk state it left", "expired-key": "the downtime before its restart (~1 1 h, ~2 48 h)",
            "late-delivery": "the restart's point where the request in flight lands (its last point plus one: after "
                             "it ends)"}


def faults_of(fault: str, wrong_at: int = 0, drift: str = "ids", commit: str = "ack-first") -> Faults:
    """What breaks in a scenario swept under `fault`: under wrong-answer the `wrong_at`-th answer,
    under drifting-model the model's answers, as `drift` says, under tracker-crash the tracker, as
    `commit` says."""
    return Faults(wrong_at, power_cut=fault == "power-cut", reused_run_id=fault == "reused-run-id",
                  drift=drift if fault == "drifting-model" else "", commit=commit if fault == "tracker-crash" else "",
                  downtimes=DOWNTIMES if fault == "expired-key" else (), late=fault == "late-delivery")


@dataclass(frozen=True)
class Fault:
    slug: str
    breaks: str  # what goes wrong
    adds: str  # what the sweep runs for it


FAULTS: dict[str, Fault] = {f.slug: f for f in (
    Fault("crash", "the loop's process dies at a crash point; the OS cache, the tracker and the person outlive it",
          "nothing: the chapter's sweep, the book's table"),
    Fault("power-cut", "the machine loses power at a crash point: the disk keeps only what the store's syncs "
                       "(--sync none|file|full) made durable, and a file whose data was not synced may be empty "
                       "or torn",
          "for each crash point, one scenario per disk state the syncs allow (ID SLUG:I~S:J~T, ~1 the crash's); "
          "stuck: an unreadable checkpoint"),
    Fault("tracker-crash", "the tracker dies with the loop, and restarts from what it made durable: it answers "
                           "before it commits (--commit ack-first), commits the record then the key (two-step), or "
                           "both in one transaction, then answers (one-txn)",
          "the tracker's own crash points, applied (in its memory only) and record-committed (two-step), among the "
          "loop's; IDs SLUG:I:J over them"),
    Fault("wrong-answer", "the person answers one 'did it happen?' question wrong: 'no' when it did, 'yes, #N' when "
                          "it did not",
          "for each question a crash scenario asks, that scenario with that one answer wrong (ID SLUG:I:J~K)"),
    Fault("drifting-model", "asked again for a turn, the model names its calls anew, as a provider does "
                            "(--drift ids), and may order them anew (--drift order): new call IDs make new keys",
          "every crash scenario, the model drifting (IDs as the crash sweep's); effects counted by what each call "
          "means, not by its ID; orphans: records of a call the model later renamed"),
    Fault("reused-run-id", "the run starts with the run ID of an earlier run of the same job, which already ran "
                           "to the end with the same call IDs: a reused run ID makes the earlier run's keys",
          "every crash scenario, after the earlier run (IDs as the crash sweep's); only this run's records count"),
    Fault("expired-key", "a restart comes after a downtime, and a keyed tracker forgets a key 24 h after it applied "
                         "it: a keyed repeat after that is applied again",
          "for each crash point, one scenario per downtime before the restart (ID SLUG:I~S:J~T, ~1 1 h, ~2 48 h)"),
    Fault("late-delivery", "a request the dead process sent lands after the restart asked about it and heard 'no', "
                           "and resent it: a tracker that only answers lookups takes both",
          "a crash point, sent, where a request is on the wire; for each death there, one scenario per crash point of "
          "the restart where it lands, or after its last (ID SLUG:I~K, one crash, re-executed)"),
)}


@dataclass(frozen=True)
class FaultSweep:
    """A variant's sweep under one fault: how many crash scenarios it starts from, and its scenarios' counts."""

    variant: str
    name: str
    fault: str
    setting: str  # what the fault was swept with (the syncs of a power cut), or ""
    crash_scenarios: int
    tally: Tally
    scenarios: Callable[[], Iterable[ScenarioResult]]  # every scenario, again, for a listing

    def record(self) -> dict[str, int | str]:
        t = self.tally
        return {
            "variant": self.variant, "name": self.name, "fault": self.fault, "setting": self.setting,
            "crash_scenarios": self.crash_scenarios, "scenarios": t.scenarios, "with_dups": t.with_dups,
            "dups": t.dups, "missing": t.missing, "wrong": t.wrong, "asks": t.asks, "stuck": t.stuck,
            "orphans": t.orphans,
        }


def crashes(variant: Variant, job: Job, store: StoreFactory, depth: int = 2,
            crash: VariantSweep | None = None) -> FaultSweep:
    """The chapter's sweep, in a fault sweep's row: its scenarios are the crash scenarios.

    Every fault sweep takes `crash`, the variant's crash sweep at `depth`, if the caller has it
    already: a fault's row counts the crash scenarios it starts from.
    """
    crash = crash or sweep_variant(variant, job, store, depth)
    return FaultSweep(variant.slug, variant.name, "crash", "", crash.tally.scenarios, crash.tally, crash.scenarios)


def sweep_fault(fault: str, variant: Variant, job: Job, depth: int = 2, sync: str = "none", drift: str = "ids",
                commit: str = "ack-first", crash: VariantSweep | None = None) -> FaultSweep:
    """`variant`'s sweep under `fault`, at the setting it takes (`sync` for a power cut, `drift` for a
    model, `commit` for a tracker); `crash` as `crashes` takes it."""
    store = memory_stores(sync)
    if fault == "power-cut":
        return power_cuts(variant, job, store, sync, depth, crash)
    if fault == "drifting-model":
        return _swept(variant, job, store, depth, fault, f"drift {drift}", faults_of(fault, drift=drift), crash)
    if fault == "tracker-crash":
        return _swept(variant, job, store, depth, fault, f"commit {commit}", faults_of(fault, commit=commit), crash)
    sweeps = {"crash": crashes, "wrong-answer": wrong_answers, "reused-run-id": reused_run_ids,
              "expired-key": expired_keys, "late-delivery": late_deliveries}
    return sweeps[fault](variant, job, store, depth, crash)


#: The option that sets a fault, for the faults that take one.
SETTING_OF = {"power-cut": "sync", "tracker-crash": "commit", "drifting-model": "drift"}
#: Every fault at each of its settings, as `--fault all` sweeps them: (fault, setting name, its value).
EVERY_SETTING: tuple[tuple[str, str, str], ...] = (
    ("crash", "", ""),
    *(("power-cut", "sync", sync) for sync in SYNCS),
    *(("tracker-crash", "commit", commit) for commit in COMMITS),
    ("wrong-answer", "", ""),
    *(("drifting-model", "drift", drift) for drift in DRIFTS),
    ("reused-run-id", "", ""),
    ("expired-key", "", ""),
    ("late-delivery", "", ""),
)


def wrong_answers(variant: Variant, job: Job, store: StoreFactory, depth: int = 2,
                  crash: VariantSweep | None = None) -> FaultSweep:
    """For each K, the sweep with the person's K-th answer wrong; of it, the scenarios that asked K questions.

    A wrong answer changes what the loop does next, so each K is a sweep of its own (shared, as the
    crash sweep is): the restarts' crash points are those they reach after the wrong answer.
    """
    crash = crash or sweep_variant(variant, job, store, depth)
    found: list[ScenarioResult] = []
    for k in range(1, max((s.outcome.asks for s in crash.scenarios()), default=0) + 1):
        for s in sweep_variant(variant, job, store, depth, faults=faults_of("wrong-answer", k)).scenarios():
            if s.outcome.asks >= k:  # the K-th question was put, and answered wrong
                found.append(replace(s, id=f"{s.id}~{k}"))
    found.sort(key=lambda s: (s.crashes, s.id))
    tally = sum((Tally.of(s.outcome, s.hits, s.saves) for s in found), Tally())
    return FaultSweep(variant.slug, variant.name, "wrong-answer", "", crash.tally.scenarios, tally, lambda: found)


def power_cuts(variant: Variant, job: Job, store: StoreFactory, sync: str, depth: int = 2,
               crash: VariantSweep | None = None) -> FaultSweep:
    """Every scenario of up to `depth` power cuts, each leaving one of the disk states `store`'s syncs allow."""
    return _swept(variant, job, store, depth, "power-cut", f"sync {sync}", faults_of("power-cut"), crash)


def reused_run_ids(variant: Variant, job: Job, store: StoreFactory, depth: int = 2,
                   crash: VariantSweep | None = None) -> FaultSweep:
    """Every crash scenario of up to `depth` crashes, run after an earlier run that had the same run ID."""
    return _swept(variant, job, store, depth, "reused-run-id", "", faults_of("reused-run-id"), crash)


def expired_keys(variant: Variant, job: Job, store: StoreFactory, depth: int = 2,
                 crash: VariantSweep | None = None) -> FaultSweep:
    """Every scenario of up to `depth` crashes, each restart after one of the `DOWNTIMES`."""
    setting = "downtime " + " or ".join(f"{h:g} h" for h in DOWNTIMES)
    return _swept(variant, job, store, depth, "expired-key", setting, faults_of("expired-key"), crash)


def late_deliveries(variant: Variant, job: Job, store: StoreFactory, depth: int = 2,
                    crash: VariantSweep | None = None) -> FaultSweep:
    """For each death with a request in flight, a scenario for each place in the restart where it lands.

    Each is re-executed from nothing: where the request lands changes the restart from there on,
    so the places are found as the restart passes them, up to the one after its last point. The
    first process must retrace the uninterrupted run up to its death, as in any replayed sweep.
    """
    crash = crash or sweep_variant(variant, job, store, depth)
    faults = faults_of("late-delivery")
    first = run_scenario(variant, job, (), store, faults)
    baseline, calls, found = first.trace(1), first.world.model.calls, []
    for i in (i for i, (label, _) in enumerate(baseline, start=1) if label == "sent"):
        for k in count(1):
            run = run_scenario(variant, job, (i,), store, faults, (k,))
            check_retrace(run, 1, baseline, "the uninterrupted run")
            found.append(run.result(job, calls))
            if k > run.passed(2):  # it landed after the restart's last point: there is no later place
                break
    tally = sum((Tally.of(s.outcome, s.hits, s.saves) for s in found), Tally())
    return FaultSweep(variant.slug, variant.name, "late-delivery", "", crash.tally.scenarios, tally, lambda: found)


def _swept(variant: Variant, job: Job, store: StoreFactory, depth: int, fault: str, setting: str,
           faults: Faults, crash: VariantSweep | None) -> FaultSweep:
    """The sweep under `faults`, beside the crash sweep whose scenarios it starts from."""
    crash = crash or sweep_variant(variant, job, store, depth)
    under = sweep_variant(variant, job, store, depth, faults=faults)
    return FaultSweep(variant.slug, variant.name, fault, setting, crash.tally.scenarios, under.tally, under.scenarios)
