"""A reused run ID: yesterday's run of the same job, under the same run ID, makes today's keys old keys.

The scripted model repeats its call IDs from run to run, so a loop that takes its run ID from the
job sends yesterday's keys, and a keyed tracker answers them from yesterday's records: every effect
of today's run is missing while the loop believes it done. Without keys the reuse is harmless, and
the agent's loop draws a fresh run ID per run, so it comes through untouched.
"""

import json
from dataclasses import dataclass

import pytest
from hypothesis import given, settings

from crashlab.engine.sweep import AGENTS, VARIANTS, Faults, memory_stores, run_scenario, sweep_variant
from crashlab.faults import reused_run_ids
from crashlab.loops.agent import AgentLoop, AgentVariant
from crashlab.loops.tools import toolbox

from .oracle import shared_is_re_executed
from .strategies import jobs

REUSED = Faults(reused_run_id=True)
KEYED = ["keys", "keys-markers"]
HARMLESS = ["per-turn", "after-reply", "markers", *AGENTS]


@dataclass(frozen=True)
class ReusingAgent(AgentVariant):
    """The agent's loop with the one rule broken: its run ID is the job's, the same every run."""

    def loop(self, job, world, store, points):
        return AgentLoop(job, world, store, points, toolbox(self.tracker_mode), lambda: job.run)


@pytest.mark.parametrize("slug", HARMLESS)
def test_a_loop_that_sends_no_old_key_counts_as_if_the_earlier_run_never_was(triage, slug):
    """Only today's records, questions and model calls count: the earlier run adds nothing to a row."""
    reused = sweep_variant(VARIANTS[slug], triage, memory_stores(), faults=REUSED).row()
    crash = sweep_variant(VARIANTS[slug], triage, memory_stores()).row()
    assert reused == crash


@pytest.mark.parametrize("slug", KEYED)
def test_a_keyed_loop_under_the_old_run_id_loses_every_effect_and_believes_it_done(triage, slug):
    swept = sweep_variant(VARIANTS[slug], triage, memory_stores(), depth=1, faults=REUSED)
    changing = tuple(c.id for c in triage.changing_calls)
    scenarios = list(swept.scenarios())
    assert scenarios
    for s in scenarios:
        assert (s.outcome.missing, s.outcome.wrong, s.outcome.extra) == (changing, changing, 0), s.id
    run = run_scenario(VARIANTS[slug], triage, (), memory_stores(), REUSED)
    answered = [e.detail for e in run.points.events if e.kind == "request" and e.detail["key"]]
    assert answered and not any(d["applied"] for d in answered)  # each answered from yesterday's record


@pytest.mark.parametrize("mode", ["keyed", "lookup"])
def test_the_agent_s_fresh_run_id_is_what_saves_it(triage, mode):
    honest = sweep_variant(AGENTS[f"agent-{mode}"], triage, memory_stores(), depth=1, faults=REUSED).row()
    reusing = sweep_variant(ReusingAgent(mode), triage, memory_stores(), depth=1, faults=REUSED).row()
    assert (honest.missing, honest.wrong) == (0, 0)
    assert reusing.missing > 0 and reusing.wrong >= reusing.missing


def test_every_scenario_is_what_re_executing_it_gives(triage):
    """The oracle: the shared sweep's outcome of each scenario equals running it, earlier run and all, from nothing."""
    shared_is_re_executed(triage, ("keys-markers", "agent-keyless"), REUSED, depth=1)


@settings(max_examples=10, deadline=None)
@given(jobs(harder=True))
def test_on_any_job_the_agent_comes_through_a_reused_run_id(job):
    for slug, agent in AGENTS.items():
        row = reused_run_ids(agent, job, memory_stores(), depth=1).record()
        assert (row["dups"], row["missing"], row["wrong"], row["stuck"], row["orphans"]) == (0, 0, 0, 0, 0), slug


def test_sweep_and_explain_under_a_reused_run_id(cli):
    code, out, err = cli("sweep", "--fault", "reused-run-id", "--variant", "keys,agent-keyed", "--depth", "1",
                         "--format", "json")
    rows = {row["variant"]: row for row in json.loads(out)}
    assert code == 0 and rows["keys"]["missing"] > 0 and rows["agent-keyed"]["missing"] == 0
    code, out, err = cli("explain", "keys-markers:5", "--fault", "reused-run-id")
    assert code == 0 and "an earlier run of the job, under the run ID it starts with, made issue #1 (A)" in out
    assert "missing:       A, B, C" in out and "the tracker knows the key, answers #1, changes nothing" in out
    code, out, err = cli("explain", "keys-markers:5~1", "--fault", "reused-run-id")
    assert (code, out) == (2, "") and "use --fault wrong-answer" in err
