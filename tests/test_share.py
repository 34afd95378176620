"""Sharing never changes a count: restarting from snapshots, each distinct state once, equals re-executing.

`share=False` re-executes every scenario from nothing, checking every crash and every retrace: it is
the oracle. The shared sweep snapshots the durable state where each crash would be and runs one
restart per distinct state. Scenario by scenario, with hits, saves and labels, the two must agree.
"""

from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from crashlab.engine.parallel import close_runner, worker_runner
from crashlab.engine.sweep import sweep, sweep_all
from crashlab.engine.tree import Tally
from crashlab.job import find_job
from crashlab.loops import FAMILIES, VARIANTS
from crashlab.loops.designs import DESIGNS
from crashlab.protocols.scenario import Setup
from crashlab.runners import RunnerSpec

from .helpers import swept
from .strategies import jobs

#: Every variant that runs in this process, each crash an exception: the loops sharing is for.
IN_PROCESS = [slug for slug, v in VARIANTS.items() if "in-process" in v.runners]
AGENTS = list(FAMILIES["agent"])


def both(slug, job, depth=2, store="memory"):
    return swept(slug, job, depth=depth, store=store), swept(slug, job, depth=depth, store=store, share=False)


def assert_equal(shared, replayed):
    assert list(shared.scenarios()) == list(replayed.scenarios())
    assert shared.row() == replayed.row()
    assert shared.tally == replayed.tally


@pytest.mark.parametrize("slug", IN_PROCESS)
def test_the_shared_sweep_of_triage_is_the_replayed_one_scenario_by_scenario(triage, slug):
    assert_equal(*both(slug, triage))


@pytest.mark.parametrize("kind", ["memory", "files"])
def test_sharing_agrees_on_both_stores(kind):
    for slug in ("keys-markers", "agent-keyless"):
        assert_equal(*both(slug, find_job("read-only"), store=kind))


@given(jobs(max_turns=2, max_calls=2), st.sampled_from(list(DESIGNS)), st.integers(1, 2))
def test_on_any_job_a_design_shares_without_changing_a_count(job, slug, depth):
    assert_equal(*both(slug, job, depth))


@given(jobs(max_turns=2, max_calls=2, harder=True), st.sampled_from(AGENTS), st.integers(1, 2))
def test_on_any_harder_job_the_agent_shares_without_changing_a_count(job, slug, depth):
    assert_equal(*both(slug, job, depth))


#: At depth 3 each example re-executes every scenario of a sweep (the agent's: about 7 s in CI, where
#: 120 examples took 815 s, a fifth of the slow suite): CI runs at most 30, the "dev" profile its 5.
DEEP = settings(max_examples=min(30, settings.default.max_examples))


@pytest.mark.slow
@DEEP
@given(jobs(max_turns=1, max_calls=2), st.sampled_from(list(DESIGNS)))
def test_on_any_job_a_design_shares_at_depth_three_without_changing_a_count(job, slug):
    assert_equal(*both(slug, job, 3))


@pytest.mark.slow
@DEEP
@given(jobs(max_turns=1, max_calls=2, harder=True), st.sampled_from(AGENTS))
def test_on_any_harder_job_the_agent_shares_at_depth_three_without_changing_a_count(job, slug):
    assert_equal(*both(slug, job, 3))


def test_the_row_is_the_sum_of_the_scenarios_it_counts(triage):
    """The tree's running sums (what a deep sweep keeps) add up to the scenarios, one by one."""
    sweep = swept("after-reply", triage, depth=3)
    total, by_depth = Tally(), [0, 0, 0]
    for s in sweep.scenarios():
        total += Tally.one(s.outcome, s.hits, s.saves)
        by_depth[len(s.crashes) - 1] += 1
    assert total.hits == sweep.tally.hits and total.saves == sweep.tally.saves
    assert (total.dups, total.with_dups, total.calls_plus) == (sweep.tally.dups, sweep.tally.with_dups, sweep.tally.calls_plus)
    assert tuple(by_depth) == sweep.row().by_depth == (34, 654, 9362)


def test_each_distinct_state_is_run_once(triage):
    """At depth 2 the memo runs one restart per distinct state, whatever the depth it is met at (a restart at the
    sweep's depth from a state a first restart started from is that restart's process), and those after a first
    death once more, to see that they repeat: `repeated` is the work, not a guess."""
    variant, started = VARIANTS["keys-markers"], []

    def counting(run):
        started.append(run.process)
        variant.entry(run)

    swept_ = sweep(Setup(replace(variant, entry=counting), triage), RunnerSpec())
    states, lives = set(), [swept_.trees[0].root]
    while lives:
        for life in lives.pop().after:
            states.add(life.state)
            lives.append(life)
    row = swept_.row()
    # the uninterrupted run twice, then each distinct state once, and each after a first death once more
    assert len(started) == 2 + len(states) + row.repeated and 0 < row.repeated < row.once
    assert len(states) < row.distinct < row.scenarios / 10


def test_the_five_designs_have_the_counted_scenarios_at_every_depth(triage):
    """3,715 at depth 2, 58,695 at depth 3, 763,997 at depth 4: the figures of an independent simulator."""
    totals = [sum(swept(slug, triage, depth=k).row().scenarios for slug in DESIGNS) for k in (2, 3, 4)]
    assert totals == [3715, 58695, 763997]


@pytest.mark.slow
@pytest.mark.parametrize("slug", IN_PROCESS)
def test_the_shared_sweep_of_triage_at_depth_three_is_the_replayed_one(triage, slug):
    assert_equal(*both(slug, triage, depth=3))


def test_a_worker_keeps_one_runner_from_unit_to_unit_until_another_kind_is_asked_for():
    memory, files = RunnerSpec(), RunnerSpec(store="files")
    try:
        held = worker_runner(memory)
        assert worker_runner(memory) is held
        other = worker_runner(files)
        assert other is not held and worker_runner(files) is other
    finally:
        close_runner()


@pytest.mark.parametrize("share", [True, False])
def test_any_number_of_workers_gives_the_same_sweep(share):
    job = find_job("read-only")
    setups = [Setup(VARIANTS["after-reply"], job), Setup(VARIANTS["agent-keyless"], job)]
    one, two = (sweep_all(setups, RunnerSpec(), depth=3 if share else 2, share=share, workers=workers) for workers in (1, 2))
    for a, b in zip(one, two, strict=True):
        assert_equal(a, b)
