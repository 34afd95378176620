"""A reused run ID: yesterday's run of the same job, under the same run ID, makes today's keys old keys.

The scripted model repeats its call IDs from run to run, so a loop that takes its run ID from the
job sends yesterday's keys, and a keyed tracker answers them from yesterday's records: every effect
of today's run is missing while the loop believes it done. Without keys the reuse is harmless, and
the agent's loop draws a fresh run ID per run, so it comes through untouched.
"""

import json
from dataclasses import replace

import pytest
from hypothesis import given, settings

from crashlab.engine.sweep import sweep
from crashlab.loops import FAMILIES, VARIANTS
from crashlab.loops.agent import AgentLoop
from crashlab.loops.tools import toolbox
from crashlab.protocols.scenario import Setup
from crashlab.protocols.variant import Variant
from crashlab.runners import RunnerSpec

from .helpers import faults, scenario, swept
from .oracle import shared_is_re_executed
from .strategies import jobs

REUSED = "reused-run-id"
AGENTS = list(FAMILIES["agent"])
KEYED = ["keys", "keys-markers"]
HARMLESS = ["per-turn", "after-reply", "markers", *AGENTS]


def reusing_agent(mode: str) -> Variant:
    """The agent's loop with the one rule broken: its run ID is the job's, the same every run."""

    def entry(run):
        AgentLoop(run, toolbox(mode), lambda: run.job.run).run()

    return replace(VARIANTS[f"agent-{mode}"], slug=f"reusing-{mode}", name=f"agent loop reusing its run ID, {mode}",
                   entry=entry)


@pytest.mark.parametrize("slug", HARMLESS)
def test_a_loop_that_sends_no_old_key_counts_as_if_the_earlier_run_never_was(triage, slug):
    """Only today's records, questions and model calls count: the earlier run adds nothing to a row."""
    reused = swept(slug, triage, REUSED).row()
    crash = swept(slug, triage).row()
    assert (reused.faults, reused.setting) == ("reused-run-id", "")
    assert replace(reused, faults="crash") == crash


@pytest.mark.parametrize("slug", KEYED)
def test_a_keyed_loop_under_the_old_run_id_loses_every_effect_and_believes_it_done(triage, slug):
    changing = tuple(c.id for c in triage.changing_calls)
    scenarios = list(swept(slug, triage, REUSED, depth=1).scenarios())
    assert scenarios
    for s in scenarios:
        assert (s.outcome.missing, s.outcome.wrong, s.outcome.extra) == (changing, changing, 0), s.id
    run = scenario(slug, triage, (), REUSED)
    answered = [e.detail for e in run.points.events if e.kind == "request" and e.detail["key"]]
    assert answered and not any(d["applied"] for d in answered)  # each answered from yesterday's record


@pytest.mark.parametrize("mode", ["keyed", "lookup"])
def test_the_agent_s_fresh_run_id_is_what_saves_it(triage, mode):
    honest = swept(f"agent-{mode}", triage, REUSED, depth=1).row()
    reusing = sweep(Setup(reusing_agent(mode), triage, faults(REUSED)), RunnerSpec(), depth=1).row()
    assert (honest.missing, honest.wrong) == (0, 0)
    assert reusing.missing > 0 and reusing.wrong >= reusing.missing


def test_every_scenario_is_what_re_executing_it_gives(triage):
    """The oracle: the shared sweep's outcome of each scenario equals running it, earlier run and all, from nothing."""
    shared_is_re_executed(triage, ("keys-markers", "agent-keyless"), REUSED, depth=1)


@settings(max_examples=10, deadline=None)
@given(jobs(harder=True))
def test_on_any_job_the_agent_comes_through_a_reused_run_id(job):
    for slug in AGENTS:
        row = swept(slug, job, REUSED, depth=1).row()
        assert (row.dups, row.missing, row.wrong, row.stuck, row.orphans) == (0, 0, 0, 0, 0), slug


def test_sweep_and_explain_under_a_reused_run_id(cli):
    code, out, err = cli("sweep", "--fault", "reused-run-id", "--variant", "keys,agent-keyed", "--depth", "1",
                         "--format", "json")
    rows = {row["variant"]: row for row in json.loads(out)}
    assert code == 0 and rows["keys"]["missing"] > 0 and rows["agent-keyed"]["missing"] == 0
    assert rows["keys"]["faults"] == "reused-run-id"
    code, out, err = cli("explain", "keys-markers+reused-run-id:5")
    assert code == 0 and "an earlier run of the job, under the run ID it starts with, made issue #1 (A)" in out
    assert "missing:       A, B, C" in out and "the tracker knows the key, answers #1, changes nothing" in out
    code, out, err = cli("explain", "keys-markers+reused-run-id:5~1")  # ~1 once named a wrong answer: no more
    assert (code, out) == (2, "") and "this scenario has none (a fault's choice for the whole scenario is its value: SLUG+FAULT=VALUE:I)" in err
