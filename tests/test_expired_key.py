"""An expired key: a keyed tracker holds a key for 24 hours, and a restart can come later than that.

Each death is followed by a short downtime (1 h) and by a long one (48 h), a scenario each. A keyed
rerun after the tracker forgot its key is applied again: a duplicate. The agent's ladder checks the
chapter's condition, "a key the other side still holds": its marker says when the attempt was made,
its tool says how long the receiver keeps keys, and an older marker goes to the lookup or ask rung.
"""

import json
from dataclasses import dataclass, replace

import pytest
from hypothesis import given, settings

from crashlab.engine.points import Recorder
from crashlab.engine.sweep import AGENTS, VARIANTS, Faults, memory_stores, run_scenario, sweep_variant
from crashlab.faults import DOWNTIMES, faults_of
from crashlab.job import Call
from crashlab.loops.agent import ASK, LOOKUP, RERUN, AgentLoop, AgentVariant, ladder
from crashlab.loops.tools import ToolSpec, toolbox
from crashlab.world import KEY_RETENTION, Clock, Tracker

from .oracle import shared_is_re_executed
from .strategies import jobs

EXPIRING = faults_of("expired-key")
A = Call("A", "create_issue", {"title": "t", "body": "b"})


@dataclass(frozen=True)
class ForgetfulAgent(AgentVariant):
    """The agent's loop with its tools declaring keys kept for ever: it reruns however old the marker."""

    def loop(self, job, world, store, points):
        tools = {name: replace(spec, key_retention=None) for name, spec in toolbox(self.tracker_mode).items()}
        return AgentLoop(job, world, store, points, tools, lambda: f"{job.run}.p{points.process}")


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


@pytest.mark.parametrize("slug", VARIANTS)
def test_within_a_day_nothing_expires_and_the_sweep_is_the_crash_sweep(triage, slug):
    short = sweep_variant(VARIANTS[slug], triage, memory_stores(), faults=Faults(downtimes=(DOWNTIMES[0],))).row()
    crash = sweep_variant(VARIANTS[slug], triage, memory_stores()).row()
    assert replace(short, distinct=0) == replace(crash, distinct=0)  # the clock tells more states apart


@pytest.mark.parametrize("slug", ["keys", "keys-markers"])
def test_a_keyed_rerun_after_the_key_expired_is_applied_again(triage, slug):
    swept = sweep_variant(VARIANTS[slug], triage, memory_stores(), faults=EXPIRING)
    dups = [s for s in swept.scenarios() if s.outcome.extra]
    assert dups and swept.row().missing == 0
    for s in dups[:: max(len(dups) // 50, 1)]:
        assert 2 in s.choices, s.id  # a long downtime came before it
        run = run_scenario(VARIANTS[slug], triage, s.crashes, memory_stores(), EXPIRING, s.choices)
        assert any(e.kind == "request" and e.detail.get("forgot") for e in run.points.events), s.id


@pytest.mark.parametrize("mode", ["keyed", "keyless", "lookup"])
def test_the_agent_comes_through_every_downtime_and_without_the_age_check_it_would_not(triage, mode):
    honest = sweep_variant(AGENTS[f"agent-{mode}"], triage, memory_stores(), faults=EXPIRING).row()
    assert (honest.with_dups, honest.missing, honest.wrong, honest.stuck) == (0, 0, 0, 0)
    forgetful = sweep_variant(ForgetfulAgent(mode), triage, memory_stores(), faults=EXPIRING).row()
    assert (forgetful.with_dups > 0) == (mode == "keyed")  # only a keyed tool's ladder reruns on a key


def test_a_saved_rerun_goes_down_the_ladder_once_its_marker_is_older_than_the_key(triage):
    """Decided at 1 h and saved, the rerun is not taken at 49 h: the restart looks the key up instead."""
    run = run_scenario(AGENTS["agent-keyed"], triage, (9, 4), memory_stores(), EXPIRING, (1, 2))
    decisions = [(e.process, e.label) for e in run.points.events if e.kind == "decision"]
    assert decisions == [(2, RERUN), (3, LOOKUP)]
    assert run.outcome(triage, 3).extra == 0


@pytest.mark.parametrize("depth", [1, pytest.param(2, marks=pytest.mark.slow)])
def test_every_scenario_is_what_re_executing_it_gives(triage, depth):
    """The oracle: the shared sweep's outcome of each scenario equals running it, downtimes and all, from nothing."""
    shared_is_re_executed(triage, ("keys-markers", "agent-keyed"), EXPIRING, depth=depth)


@settings(max_examples=6, deadline=None)
@given(jobs(max_calls=2, harder=True))
def test_on_any_job_the_agent_comes_through_an_expired_key(job):
    for slug, agent in AGENTS.items():
        row = sweep_variant(agent, job, memory_stores(), faults=EXPIRING).row()
        assert (row.dups, row.missing, row.wrong, row.stuck) == (0, 0, 0, 0), slug


def test_sweep_and_explain_under_expired_keys(cli):
    code, out, err = cli("sweep", "--fault", "expired-key", "--variant", "keys-markers,agent-keyed", "--depth", "1",
                         "--format", "json")
    rows = {row["variant"]: row for row in json.loads(out)}
    assert code == 0 and rows["keys-markers"]["dups"] > 0 and rows["agent-keyed"]["dups"] == 0
    assert rows["agent-keyed"]["setting"] == "downtime 1 h or 48 h"
    code, out, err = cli("explain", "keys-markers:9~2", "--fault", "expired-key")
    assert code == 0 and "it starts 48 h after the death" in out and "the tracker has FORGOTTEN the key" in out
    code, out, err = cli("explain", "agent-keyed:9~2", "--fault", "expired-key")
    assert code == 0 and "the ladder says LOOKUP, the key may have expired (the marker is 48 h old" in out
    for bad, problem in (("keys:9", "every crash names the downtime before its restart"), ("keys:9~0", "from 1"),
                         ("keys:9~3", "leaves 2 downtimes (~1 to ~2)"), ("keys:9~1:999~1", "no point 999")):
        code, out, err = cli("explain", bad, "--fault", "expired-key")
        assert (code, out) == (2, "") and problem in err, bad
    code, out, err = cli("sweep", "--fault", "expired-key", "--sync", "file")
    assert (code, out) == (2, "") and "it needs --fault power-cut" in err
