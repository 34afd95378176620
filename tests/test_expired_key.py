"""An expired key: a keyed tracker holds a key for 24 hours, and a restart can come later than that.

Each death is followed by a short downtime (1 h) and by a long one (48 h), a scenario each. A keyed
rerun after the tracker forgot its key is applied again: a duplicate. The agent's ladder checks the
chapter's condition, "a key the other side still holds": its marker says when the attempt was made,
its tool says how long the receiver keeps keys, and an older marker goes to the lookup or ask rung.
"""

import json
from dataclasses import replace

import pytest
from hypothesis import given, settings

from crashlab.engine.sweep import sweep
from crashlab.faults.expired_key import DOWNTIMES
from crashlab.job import Call
from crashlab.loops import FAMILIES, VARIANTS
from crashlab.loops.agent import ASK, LOOKUP, RERUN, AgentLoop, ladder
from crashlab.loops.tools import ToolSpec, toolbox
from crashlab.protocols.points import Recorder
from crashlab.protocols.scenario import Setup
from crashlab.protocols.variant import Variant
from crashlab.runners import RunnerSpec
from crashlab.world import KEY_RETENTION, Clock, Tracker

from .helpers import faults, outcome, scenario, swept
from .oracle import shared_is_re_executed
from .strategies import jobs

EXPIRING = "expired-key"
IN_PROCESS = [slug for slug, v in VARIANTS.items() if "in-process" in v.runners]
AGENTS = list(FAMILIES["agent"])
A = Call("A", "create_issue", {"title": "t", "body": "b"})


def forgetful_agent(mode: str) -> Variant:
    """The agent's loop with its tools declaring keys kept for ever: it reruns however old the marker."""
    tools = {name: replace(spec, key_retention=None) for name, spec in toolbox(mode).items()}

    def entry(run):
        AgentLoop(run, tools, lambda: f"{run.job.run}.p{run.process}").run()

    return replace(VARIANTS[f"agent-{mode}"], slug=f"forgetful-{mode}", name=f"agent loop, keys kept for ever, {mode}",
                   entry=entry)


def cost(s):
    """A scenario as a sweep counts it, but for its ID: where it crashed, what it came to, and its cost."""
    return s.crashes, s.points, s.outcome, s.hits, s.saves


def test_a_keyed_tracker_forgets_a_key_after_its_retention_but_a_lookup_still_finds_the_record():
    points, clock = Recorder(), Clock()
    points.start_process()
    tracker = Tracker(points, "keyed", clock)
    assert tracker.request(A, A.args, "k") == 1
    clock.hours = KEY_RETENTION - 1
    assert tracker.request(A, A.args, "k") == 1 and len(tracker.records) == 1
    clock.hours = KEY_RETENTION
    assert tracker.request(A, A.args, "k") == 2 and len(tracker.records) == 2
    assert tracker.request(A, A.args, "k") == 2  # the new application holds the key afresh
    assert tracker.lookup("k") == 2


def test_the_ladder_reruns_a_keyed_call_only_while_the_receiver_still_holds_the_key():
    keyed, lookup, keyless = toolbox("keyed")["create_issue"], toolbox("lookup")["create_issue"], toolbox("keyless")
    assert ladder(keyed, 1.0)[0] == RERUN and ladder(keyed, KEY_RETENTION)[0] == LOOKUP
    assert "the marker is 48 h old, keys are kept 24 h" in ladder(keyed, 48.0)[1]
    no_lookup = ToolSpec("create_issue", honours_keys=True, key_retention=KEY_RETENTION)
    assert ladder(no_lookup, 48.0)[0] == ASK
    assert ladder(replace(keyed, key_retention=None), 1e6)[0] == RERUN
    assert ladder(lookup, 48.0)[0] == LOOKUP and ladder(keyless["create_issue"], 48.0)[0] == ASK
    assert ladder(keyless["search"], 48.0)[0] == RERUN


@pytest.mark.parametrize("slug", IN_PROCESS)
def test_within_a_day_nothing_expires_and_the_sweep_is_the_crash_sweep(triage, slug):
    """The scenarios whose every restart came after the short downtime are the crash sweep's, one by one."""
    assert DOWNTIMES[0] * 2 < KEY_RETENTION  # two short downtimes in a row stay within a day
    expiring = swept(slug, triage, EXPIRING)
    short = [cost(s) for s in expiring.scenarios() if all(choice == (1,) for choice in s.choices)]
    assert short == [cost(s) for s in swept(slug, triage).scenarios()]
    assert expiring.row().scenarios > len(short)  # and the long downtimes are scenarios beside them


@pytest.mark.parametrize("slug", ["keys", "keys-markers"])
def test_a_keyed_rerun_after_the_key_expired_is_applied_again(triage, slug):
    expiring = swept(slug, triage, EXPIRING)
    dups = [s for s in expiring.scenarios() if s.outcome.extra]
    assert dups and expiring.row().missing == 0
    for s in dups[:: max(len(dups) // 50, 1)]:
        assert (2,) in s.choices, s.id  # a long downtime came before it
        run = scenario(slug, triage, s.crashes, EXPIRING, choices=s.choices)
        assert any(e.kind == "request" and e.detail.get("forgot") for e in run.points.events), s.id


@pytest.mark.parametrize("mode", ["keyed", "keyless", "lookup"])
def test_the_agent_comes_through_every_downtime_and_without_the_age_check_it_would_not(triage, mode):
    honest = swept(f"agent-{mode}", triage, EXPIRING).row()
    assert (honest.with_dups, honest.missing, honest.wrong, honest.stuck) == (0, 0, 0, 0)
    forgetful = sweep(Setup(forgetful_agent(mode), triage, faults(EXPIRING)), RunnerSpec()).row()
    assert (forgetful.with_dups > 0) == (mode == "keyed")  # only a keyed tool's ladder reruns on a key


def test_a_saved_rerun_goes_down_the_ladder_once_its_marker_is_older_than_the_key(triage):
    """Decided at 1 h and saved, the rerun is not taken at 49 h: the restart looks the key up instead."""
    run = scenario("agent-keyed", triage, (9, 4), EXPIRING, choices=((1,), (2,)))
    decisions = [(e.process, e.label) for e in run.points.events if e.kind == "decision"]
    assert decisions == [(2, RERUN), (3, LOOKUP)]
    assert outcome(run).extra == 0


@pytest.mark.parametrize("depth", [1, pytest.param(2, marks=pytest.mark.slow)])
def test_every_scenario_is_what_re_executing_it_gives(triage, depth):
    """The oracle: the shared sweep's outcome of each scenario equals running it, downtimes and all, from nothing."""
    shared_is_re_executed(triage, ("keys-markers", "agent-keyed"), EXPIRING, depth=depth)


@settings(max_examples=6, deadline=None)
@given(jobs(max_calls=2, harder=True))
def test_on_any_job_the_agent_comes_through_an_expired_key(job):
    for slug in AGENTS:
        row = swept(slug, job, EXPIRING).row()
        assert (row.dups, row.missing, row.wrong, row.stuck) == (0, 0, 0, 0), slug


def test_sweep_and_explain_under_expired_keys(cli):
    code, out, err = cli("sweep", "--fault", "expired-key", "--variant", "keys-markers,agent-keyed", "--depth", "1",
                         "--format", "json")
    rows = {row["variant"]: row for row in json.loads(out)}
    assert code == 0 and rows["keys-markers"]["dups"] > 0 and rows["agent-keyed"]["dups"] == 0
    assert (rows["agent-keyed"]["faults"], rows["agent-keyed"]["setting"]) == ("expired-key", "")  # no setting
    code, out, err = cli("explain", "keys-markers+expired-key:9~2")
    assert code == 0 and "it starts 48 h after the death" in out and "the tracker has FORGOTTEN the key" in out
    code, out, err = cli("explain", "agent-keyed+expired-key:9~2")
    assert code == 0 and "the ladder says LOOKUP, the key may have expired (the marker is 48 h old" in out
    for bad, problem in (("keys+expired-key:9", "under expired-key every crash names the state its death left"),
                         ("keys+expired-key:9~0", "from 1"),
                         ("keys+expired-key:9~3", "the death at process 1's point 9 leaves 2 states (~1, ~2)"),
                         ("keys+expired-key:9~1:999~1", "no point 999")):
        code, out, err = cli("explain", bad)
        assert (code, out) == (2, "") and problem in err, bad
    code, out, err = cli("sweep", "--fault", "expired-key", "--sync", "file")
    assert (code, out) == (2, "") and "it needs --fault power-cut" in err
