"""A tracker that crashes: it dies with the loop, and restarts from what it had made durable.

Three trackers make a request durable three ways, each with crash points of its own. One that
answers before it commits loses effects the loop believes done; one that commits the record and
then its key loses the key, so a keyed repeat files the issue again; one that commits both in one
transaction before it answers loses nothing a loop has heard of, and the agent's loop comes through.
"""

import json

import pytest
from hypothesis import given, settings

from crashlab.faults.tracker_crash import COMMITS, CommittingTracker
from crashlab.job import Call
from crashlab.loops import FAMILIES, VARIANTS
from crashlab.protocols.points import Recorder
from crashlab.world import Clock, Tracker

from .helpers import scenario, swept
from .oracle import shared_is_re_executed
from .strategies import jobs

UNDER = {commit: f"tracker-crash={commit}" for commit in COMMITS}
IN_PROCESS = [slug for slug, v in VARIANTS.items() if "in-process" in v.runners]
AGENTS = list(FAMILIES["agent"])
A = Call("A", "create_issue", {"title": "t", "body": "b"})
B = Call("B", "create_issue", {"title": "u", "body": "b"})


@pytest.mark.parametrize(("commit", "seen"), [
    ("ack-first", [("applied", (1, {"k"})), ("accepted", (1, {"k"}))]),
    ("two-step", [("applied", (1, {"k"})), ("record-committed", (0, {"k"})), ("accepted", (0, set()))]),
    ("one-txn", [("applied", (1, {"k"})), ("accepted", (0, set()))]),
    ("", [("accepted", (0, set()))]),
])
def test_what_each_tracker_would_lose_at_each_of_its_points(commit, seen):
    points = Recorder()
    tracker = CommittingTracker(points, "keyed", Clock(), commit=commit) if commit else Tracker(points, "keyed", Clock())
    points.observers.append(
        lambda: at.append((points.events[-1].label, (tracker.unsaved()[0], set(tracker.unsaved()[1])))))
    points.start_process()
    at: list = []
    tracker.request(A, A.args, "k")
    assert at == seen
    tracker.request(B, B.args, "j")
    assert tracker.unsaved()[0] == (1 if commit == "ack-first" else 0)  # the write behind A's answer is done now


def test_a_durable_tracker_adds_no_crash_point(triage):
    labels = {point.label for point in scenario("keys-markers", triage, ()).points.points(1)}
    assert not labels & {"applied", "record-committed"}


@pytest.mark.parametrize("slug", IN_PROCESS)
def test_a_tracker_that_answers_before_it_commits_loses_effects_the_loop_believes_done(triage, slug):
    lost = [s for s in swept(slug, triage, UNDER["ack-first"], depth=1).scenarios() if s.outcome.missing]
    assert lost
    assert all(set(s.outcome.missing) <= set(s.outcome.wrong) for s in lost)


@pytest.mark.parametrize("slug", ["keys", "keys-markers", "per-turn-keys", "agent-keyed", "agent-lookup"])
def test_a_tracker_that_commits_the_key_second_loses_it_and_a_keyed_repeat_duplicates(triage, slug):
    crashed = swept(slug, triage, UNDER["two-step"], depth=1)
    dups = [s for s in crashed.scenarios() if s.outcome.extra]
    assert dups and crashed.row().missing == 0
    assert all(len(s.points) == 1 and s.points[0].startswith("record-committed#") for s in dups)


@pytest.mark.parametrize("slug", ["keys", "keys-markers", "per-turn-keys", *AGENTS])
def test_against_a_one_transaction_tracker_the_keyed_loops_and_the_agent_come_through(triage, slug):
    row = swept(slug, triage, UNDER["one-txn"]).row()
    assert (row.with_dups, row.missing, row.wrong) == (0, 0, 0)


@pytest.mark.parametrize("commit", COMMITS)
def test_every_scenario_is_what_re_executing_it_gives(triage, commit):
    """The oracle: the shared sweep's outcome of each scenario equals running it, the tracker's deaths and all, anew."""
    shared_is_re_executed(triage, ("keys-markers", "agent-lookup"), UNDER[commit], sample=200)


@settings(max_examples=6, deadline=None)
@given(jobs(max_calls=2, harder=True))
def test_on_any_job_the_agent_comes_through_a_one_transaction_tracker_s_crashes(job):
    for slug in AGENTS:
        row = swept(slug, job, UNDER["one-txn"]).row()
        assert (row.dups, row.missing, row.wrong, row.stuck) == (0, 0, 0, 0), slug


def test_sweep_and_explain_a_tracker_crash(cli):
    code, out, err = cli("sweep", "--fault", "tracker-crash", "--commit", "two-step", "--variant",
                         "keys-markers,agent-keyless", "--depth", "1", "--format", "json")
    rows = {row["variant"]: row for row in json.loads(out)}
    assert code == 0 and rows["keys-markers"]["dups"] > 0 and rows["agent-keyless"]["dups"] == 0
    assert rows["keys-markers"]["setting"] == "commit two-step"
    assert rows["keys-markers"]["faults"] == "tracker-crash two-step"
    code, out, err = cli("explain", "agent-keyed+tracker-crash=two-step:10")
    assert code == 0 and "the tracker lost the key of A: not yet durable" in out and "DUPLICATED" in out
    code, out, err = cli("explain", "agent-keyed+tracker-crash:14")  # ack-first, the fault's default
    assert code == 0 and out.startswith("scenario agent-keyed+tracker-crash=ack-first:14:")
    assert "the tracker lost issue #1 (A): not yet durable" in out and "missing:       A" in out
    for args, problem in ((["sweep", "--commit", "one-txn"], "it needs --fault tracker-crash"),
                          (["sweep", "--fault", "tracker-crash", "--commit", "later"], "'later' is not one of"),
                          (["explain", "agent-keyed+tracker-crash=later:14"], "--commit 'later' is not one of")):
        code, out, err = cli(*args)
        assert (code, out) == (2, "") and problem in err, args
