"""A late delivery: the request a process sent just before it died lands after the restart asked about it.

A changing request spends time on the wire (the crash point ``sent``). A death there leaves it in
flight, and it lands at any crash point of the restart, or after its last: a scenario for each. A
tracker that only answers lookups says "no" before it lands, takes the resend, then the late one: a
duplicate. A fencing tracker's "no" retires the key, refuses the late arrival, and the agent resends
under the call's next key, saved before it leaves; a keyed tracker answers the late one from the key.
"""

import json
import re
from dataclasses import replace

import msgspec
import pytest
from hypothesis import given, settings

from crashlab.durable.checkpoint import Checkpoint, CheckpointError, TurnRecord
from crashlab.engine.sweep import sweep
from crashlab.faults.late_delivery import Delivery, InFlight
from crashlab.job import Call
from crashlab.loops import FAMILIES, VARIANTS
from crashlab.loops.agent import LOOKUP, AgentLoop, ladder
from crashlab.loops.keys import key
from crashlab.loops.tools import toolbox
from crashlab.protocols.points import Recorder
from crashlab.protocols.scenario import Setup
from crashlab.protocols.variant import Variant
from crashlab.report.story import find_scenario
from crashlab.runners import RunnerSpec
from crashlab.world import Fenced, Tracker, Wire
from crashlab.world.sqlite import Database, SqliteTracker

from .helpers import faults, results, runner, scenario, swept
from .oracle import shared_is_re_executed
from .strategies import jobs

LATE = "late-delivery"
AGENTS = list(FAMILIES["agent"])
A = Call("A", "create_issue", {"title": "t", "body": "b"})


def late(slug, job):
    """`slug`'s sweep under late delivery."""
    return swept(slug, job, LATE)


def run_late(slug, job, crashes, choices):
    return scenario(slug, job, crashes, LATE, choices=choices)


@pytest.mark.parametrize("make", [lambda points, db: Tracker(points, "fencing"),
                                  lambda points, db: SqliteTracker(points, db, "fencing")], ids=["memory", "sqlite"])
def test_a_fencing_lookup_that_finds_nothing_retires_the_key(tmp_path, make):
    points = Recorder()
    points.start_process()
    with Database(tmp_path / "t.sqlite") as db:
        tracker = make(points, db)
        assert tracker.request(A, A.args, "k1") == 1 and tracker.lookup("k1") == 1  # found: nothing fenced
        assert tracker.lookup("k2") is None and tracker.fenced() == {"k2"}
        with pytest.raises(Fenced, match="fenced by a lookup"):
            tracker.request(A, A.args, "k2")
        assert len(tracker.records) == 1


def test_a_late_request_lands_as_any_request_would_but_for_a_fenced_key():
    points = Recorder()
    points.start_process()
    lookup, fencing, keyed = Tracker(points, "lookup"), Tracker(points, "fencing"), Tracker(points, "keyed")
    for tracker in (lookup, fencing, keyed):
        tracker.lookup("k")
        tracker.request(A, A.args, "k" if tracker is not fencing else "k2")
        wire = InFlight(Wire(tracker))  # the wire a dead process left the request on, as a restart finds it
        wire.restore((Delivery(A, dict(A.args), "k"), points.passed + 1))  # to land after the last point
        wire.finish()
    assert (len(lookup.records), len(fencing.records), len(keyed.records)) == (2, 1, 1)
    assert [e.detail["fenced"] for e in points.events if e.kind == "late"] == [False, True, False]
    assert points.passed == 3  # an `accepted` per request, and none within a landing


def test_the_fencing_rung_and_the_key_generations():
    fencing = toolbox("fencing")["create_issue"]
    assert ladder(fencing)[0] == LOOKUP and "fences the key" in ladder(fencing)[1]
    assert key("r", "A") == key("r", "A", 1) != key("r", "A", 2) != key("r", "A", 3)
    turn = Checkpoint.new("r").with_turn(TurnRecord.reply(1, (A,)))
    assert turn.with_fenced("A").with_fenced("A").turns[-1].generation("A") == 3


def test_a_checkpoint_that_counts_fenced_keys_is_checked_like_the_rest():
    fenced = Checkpoint.new("r").with_turn(TurnRecord.reply(1, (A,))).with_fenced("A")
    assert Checkpoint.from_json(fenced.to_json()) == fenced
    data = json.loads(fenced.to_json())
    for mangle, problem in ((lambda t: t["fenced"].update(Z=1), "fenced names 'Z'"),
                            (lambda t: t["fenced"].update(A=0), r"fenced"),
                            (lambda t: t.pop("fenced"), "missing required field `fenced`")):
        bad = json.loads(json.dumps(data))
        mangle(bad["turns"][0])
        with pytest.raises(CheckpointError, match=problem):
            Checkpoint.from_json(json.dumps(bad))
    data["format"] = 2
    with pytest.raises(CheckpointError, match="format 2 is an older crashlab's, which keeps no count of fenced keys"):
        Checkpoint.from_json(msgspec.json.encode(data))


def test_every_place_in_the_restart_is_a_scenario_of_its_own(triage):
    """For each death at `sent`, the request lands at the restart's points 1..N or after its N-th, N being
    the points of the restart it does not reach; up to where it lands, each restart retraces that one."""
    scenarios = list(late("agent-lookup", triage).scenarios())
    sent = [i for i, e in enumerate(scenario("agent-lookup", triage, (), LATE).points.points(1), start=1)
            if e.label == "sent"]
    assert sent and sorted({s.crashes for s in scenarios}) == [(i,) for i in sent]
    for i in sent:
        places = [s.choices[0][0] for s in scenarios if s.crashes == (i,)]
        after = run_late("agent-lookup", triage, (i,), ((places[-1],),))
        assert places == list(range(1, after.passed(2) + 2))  # the last lands after the restart's last point
        for k in places[:-1]:
            run = run_late("agent-lookup", triage, (i,), ((k,),))
            assert run.trace(2)[:k] == after.trace(2)[:k], run.id


def test_a_lookup_tracker_duplicates_exactly_when_the_request_lands_after_its_no(triage):
    for s in late("agent-lookup", triage).scenarios():
        run = run_late("agent-lookup", triage, s.crashes, s.choices)
        told = [e.kind for e in run.points.events if e.kind in ("lookup", "late")]
        heard_no = next(e for e in run.points.events if e.kind == "lookup").detail["answer"] is None
        assert (s.outcome.extra == 1) == (told == ["lookup", "late"] and heard_no), s.id


def test_the_agent_comes_through_against_the_keyed_and_the_fencing_trackers_and_not_the_lookup_one(triage):
    rows = {slug: late(slug, triage).tally for slug in AGENTS}
    for slug in ("agent-keyed", "agent-fencing"):
        assert rows[slug].scenarios > 0 and (rows[slug].dups, rows[slug].missing, rows[slug].wrong) == (0, 0, 0), slug
    assert rows["agent-lookup"].with_dups > 0 and rows["agent-keyless"].with_dups > 0
    assert rows["agent-keyless"].asks == rows["agent-keyless"].scenarios  # the person said no, truthfully


@pytest.mark.parametrize(("slug", "duplicates"), [("per-turn", True), ("after-reply", True), ("keys", False),
                                                  ("markers", True), ("keys-markers", False),
                                                  ("per-turn-keys", False)])
def test_a_key_the_receiver_honours_absorbs_the_late_request(triage, slug, duplicates):
    tally = late(slug, triage).tally
    assert tally.scenarios > 0 and (tally.dups > 0) == duplicates and tally.missing == 0


def test_a_fenced_late_request_is_refused_and_the_resend_carries_the_next_key(triage):
    refused = [s for s in late("agent-fencing", triage).scenarios()
               if any(e.kind == "late" and e.detail["fenced"] for e in
                      run_late("agent-fencing", triage, s.crashes, s.choices).points.events)]
    assert refused
    run = run_late("agent-fencing", triage, refused[0].crashes, refused[0].choices)
    requests = [e.detail["key"] for e in run.points.events if e.kind in ("request", "late") and e.detail["call"] == "A"]
    assert len(set(requests)) == 2 and run.final.turns[0].fenced == {"A": 1}


def fencing_agent(slug: str, entry) -> Variant:
    """The agent's loop against the fencing tracker, run as `entry`."""
    return replace(VARIANTS["agent-fencing"], slug=slug, name=slug, entry=entry)


def same_key(run):
    """The agent's loop resending under the key its lookup fenced."""
    loop = AgentLoop(run, toolbox("fencing"), lambda: f"{run.job.run}.p{run.process}")
    loop.key = lambda call: key(loop.checkpoint.run, call.id)
    loop.run()


class UnsavedFenceLoop(AgentLoop):
    """Retires a fenced key in memory only: the saved checkpoint never learns of the resend's new key."""

    def save(self):
        kept = self.checkpoint
        if kept.turns:
            self.checkpoint = kept._last(fenced={})
        super().save()
        self.checkpoint = kept


def unsaved_fence(run):
    UnsavedFenceLoop(run, toolbox("fencing"), lambda: f"{run.job.run}.p1").run()


def test_a_loop_that_resends_under_a_fenced_key_is_refused(triage):
    with runner() as run, pytest.raises(Fenced):
        run.scenario(Setup(fencing_agent("same-key", same_key), triage, faults(LATE)), (9,), ((9,),))


def test_a_loop_that_does_not_save_the_new_key_duplicates_when_a_restart_dies_after_the_resend(triage):
    honest = swept("agent-fencing", triage, depth=2).row()
    forgetful = sweep(Setup(fencing_agent("unsaved-fence", unsaved_fence), triage), RunnerSpec(), depth=2).row()
    assert (honest.dups, honest.missing) == (0, 0) and forgetful.dups > 0


def test_without_late_requests_the_fencing_agent_fares_as_the_lookup_one(triage):
    fencing, lookup = (swept(s, triage).row() for s in ("agent-fencing", "agent-lookup"))
    assert (fencing.dups, fencing.missing, fencing.asks) == (0, 0, 0)
    assert fencing.scenarios > lookup.scenarios and fencing.calls_plus == lookup.calls_plus  # a save more to crash at


def test_explain_replays_each_scenario_the_sweep_counts(triage):
    for slug in ("keys-markers", "agent-lookup", "agent-fencing"):
        scenarios = list(late(slug, triage).scenarios())
        for s in scenarios[:: max(len(scenarios) // 20, 1)]:
            run, baseline = find_scenario(s.id, triage, VARIANTS)
            assert (run.id, run.outcome(baseline)) == (s.id, s.outcome)


@settings(max_examples=8, deadline=None)
@given(jobs(max_calls=2, harder=True))
def test_on_any_job_the_agent_comes_through_a_late_request_against_keyed_and_fencing_trackers(job):
    for slug in ("agent-keyed", "agent-fencing"):
        tally = late(slug, job).tally
        assert (tally.dups, tally.missing, tally.wrong, tally.stuck) == (0, 0, 0, 0), slug


def test_a_late_delivery_crashes_once_and_its_shared_sweep_is_the_replayed_one(triage):
    """Where the request lands changes the restart from there on: a scenario crashes once, no more, and the
    shared sweep, which restarts from what each death left, finds exactly what re-executing each finds."""
    shared = swept("keys", triage, LATE, depth=2)
    assert shared.row().by_depth == (shared.row().scenarios,) and all(len(s.crashes) == 1 for s in shared.scenarios())
    assert results(shared) == results(swept("keys", triage, LATE, depth=2, share=False))
    i = next(i for i, e in enumerate(shared.first.points.points(1), start=1) if e.label == "sent")
    restart = run_late("keys", triage, (i,), ((1,),))
    j = next(j for j, e in enumerate(restart.points.points(2), start=1) if e.label == "sent")  # a request in flight
    with pytest.raises(ValueError):
        run_late("keys", triage, (i, j), ((1,), (1,)))


def test_every_scenario_is_what_re_executing_it_gives(triage):
    """The oracle: the shared sweep's outcome of each scenario equals running it, the late request and all, anew."""
    shared_is_re_executed(triage, ("keys-markers", "agent-lookup", "agent-fencing"), LATE)


def test_sweep_and_explain_under_late_delivery(cli):
    code, out, err = cli("sweep", "--fault", "late-delivery", "--loop", "agent", "--format", "json")
    rows = {row["variant"]: row for row in json.loads(out)}
    assert code == 0 and rows["agent-lookup"]["dups"] > 0 and rows["agent-fencing"]["dups"] == 0
    assert rows["agent-lookup"]["faults"] == "late-delivery"
    code, out, err = cli("explain", "agent-lookup+late-delivery:9~9")
    assert code == 0 and "LATE: the request of A" in out and "A ×2 (DUPLICATED)" in out
    code, out, err = cli("explain", "agent-fencing+late-delivery:9~9")
    assert code == 0 and "the tracker REFUSES it: a lookup fenced its key" in out and "duplicates:    none" in out
    for bad, problem in (("agent-lookup+late-delivery:9", "under late-delivery every crash names the state its death"),
                         ("agent-lookup+late-delivery:8~1", "point 8 leaves no state these faults choose from"),
                         ("agent-lookup+late-delivery:9~999", "(~1 to ~"),
                         ("agent-lookup+late-delivery:999~1", "no point 999")):
        code, out, err = cli("explain", bad)
        assert (code, out) == (2, "") and problem in err, bad
    # the restart's point 12 has a request in flight too, but the restart of a late delivery crashes no more
    code, out, err = cli("explain", "agent-lookup+late-delivery:9~1:12~1")
    assert (code, out) == (2, "") and re.search(r"crashes once|one crash", err), err


def test_a_sweep_under_late_delivery_is_the_same_on_any_number_of_workers(cli):
    args = ("sweep", "--fault", "late-delivery", "--variant", "keys,agent-lookup", "--depth", "1", "--format", "json")
    code, one, err = cli(*args, "--workers", "1")
    assert code == 0 and json.loads(one)[1]["dups"] > 0
    code, out, err = cli(*args, "--workers", "2")
    assert (code, out) == (0, one), err[-300:]
