"""The fault timeout: a reply that never comes, with no crash at all. Keys absorb the resend; keyless loops duplicate;
the agent's loop settles the unknown outcome on its ladder instead of retrying blindly, or giving up."""

from dataclasses import replace

import pytest
from hypothesis import given
from hypothesis import strategies as st

from crashlab import point
from crashlab.engine.sweep import sweep
from crashlab.loops import FAMILIES, VARIANTS
from crashlab.loops.designs import DESIGNS, DesignLoop
from crashlab.loops.tools import invoke
from crashlab.protocols.scenario import Setup
from crashlab.runners import RunnerSpec
from crashlab.world import NoReply

from .helpers import faults, outcome, scenario, swept
from .oracle import shared_is_re_executed
from .strategies import jobs

AGENTS = list(FAMILIES["agent"])


def test_a_lost_reply_to_an_applied_request_is_resent_and_a_keyless_loop_files_twice(triage):
    run = scenario("after-reply", triage, (), "timeout=1-applied")  # A is applied, its reply lost; no crash
    assert [r.call for r in run.world.tracker.records] == ["A", "A", "B", "C"]
    assert outcome(run).dups == {"A": 1}
    notes = [e for e in run.points.events if e.kind in ("no-reply", "retry")]
    assert [(e.kind, e.detail["call"]) for e in notes] == [("no-reply", "A"), ("retry", "A")]
    assert [e.kind for e in run.points.crashes()] == []


def test_a_request_that_never_arrived_is_resent_once_and_lands_once(triage):
    run = scenario("after-reply", triage, (), "timeout=1-lost")
    assert [r.call for r in run.world.tracker.records] == ["A", "B", "C"]
    assert outcome(run).dups == {} and outcome(run).missing == ()


@pytest.mark.parametrize("slug", ["keys", "keys-markers", "per-turn-keys"])
def test_a_key_absorbs_every_resend(triage, slug):
    row = swept(slug, triage, "timeout", depth=1).row()
    assert row.uncrashed == 2 * len(triage.changing_calls)  # each request, each way, with no crash
    assert (row.dups, row.missing, row.wrong) == (0, 0, 0)


@pytest.mark.parametrize("slug", ["per-turn", "after-reply", "markers"])
def test_a_keyless_loop_duplicates_whenever_the_tracker_had_applied_the_request(triage, slug):
    uncrashed = [s for s in swept(slug, triage, "timeout", depth=1).scenarios() if not s.crashes]
    assert len(uncrashed) == 6
    for s in uncrashed:
        applied = s.id.endswith("-applied")
        assert (s.outcome.extra == 1) is applied, s.id
        assert s.outcome.missing == () and s.outcome.asks == 0, s.id


def test_without_a_timeout_the_crash_scenarios_are_the_crash_sweep_s(triage):
    """Every crash scenario of a timed-out run is there too, under the ID that names the timeout."""
    plain = swept("keys", triage, depth=1).row()
    timed = swept("keys", triage, "timeout=2-lost", depth=1).row()
    assert timed.uncrashed == 1 and timed.once >= plain.once


@pytest.mark.parametrize("slug", AGENTS)
def test_the_agent_settles_a_timeout_on_its_ladder_and_comes_through(triage, slug):
    row = swept(slug, triage, "timeout", depth=1).row()
    assert (row.dups, row.missing, row.wrong, row.stuck) == (0, 0, 0, 0)
    assert (row.asks > 0) is (slug == "agent-keyless")  # only a keyless tracker leaves it to the person


def test_the_ladder_settles_the_unknown_outcome_rung_by_rung(triage):
    for slug, rung in (("agent-keyed", "rerun"), ("agent-lookup", "lookup"), ("agent-keyless", "ask"),
                       ("agent-fencing", "lookup")):
        run = scenario(slug, triage, (), "timeout=1-applied")
        events = [e for e in run.points.events if e.kind in ("no-reply", "decision", "retry")]
        assert [(e.kind, e.label) for e in events][:2] == [("no-reply", "create_issue"), ("decision", rung)], slug
        assert not any(e.kind == "retry" for e in events)
        assert [r.call for r in run.world.tracker.records] == ["A", "B", "C"], slug


def test_a_fencing_lookup_that_finds_nothing_resends_under_the_next_key(triage):
    run = scenario("agent-fencing", triage, (), "timeout=1-lost")
    keys = [e.detail["key"] for e in run.points.events if e.kind == "request" and e.detail["call"] == "A"]
    assert len(keys) == 1 and [r.call for r in run.world.tracker.records] == ["A", "B", "C"]
    assert keys[0] != next(e.detail["key"] for e in run.points.events if e.kind == "no-reply")


class GivesUp(DesignLoop):
    """Takes a timeout for a failure: it saves a made-up result and moves on, never resending."""

    def make_call(self, call, results):
        try:
            result = invoke(self.world, call, results)
        except NoReply:
            result = 1
        point("returned")
        return result


def test_a_loop_that_takes_a_timeout_for_a_failure_is_caught_losing_the_effect(triage):
    """The hostile loop: it never duplicates, and the harness still counts what it lost and got wrong."""
    hostile = replace(VARIANTS["after-reply"], slug="gives-up", name="gives up",
                      entry=lambda run: GivesUp(DESIGNS["after-reply"], run).run())
    uncrashed = [s for s in sweep(Setup(hostile, triage, faults("timeout")), RunnerSpec(), depth=1).scenarios() if not s.crashes]
    lost = [s for s in uncrashed if s.id.endswith("-lost")]
    assert lost and all(s.outcome.missing or s.outcome.wrong for s in lost)
    assert all(s.outcome.extra == 0 for s in uncrashed)  # it never resends, so a timeout alone never duplicates


def test_every_scenario_is_what_re_executing_it_gives(triage):
    shared_is_re_executed(triage, ("after-reply", "keys-markers", "agent-lookup"), "timeout", depth=1, sample=60)


@given(jobs(max_turns=2, max_calls=2, harder=True), st.sampled_from(["agent-keyed", "agent-fencing"]))
def test_on_any_job_the_agent_comes_through_a_timeout(job, slug):
    row = swept(slug, job, "timeout", depth=1).row()
    assert (row.dups, row.missing, row.wrong, row.asks) == (0, 0, 0, 0)


def test_sweep_explain_and_hostile_ids_at_the_command_line(cli):
    code, out, _ = cli("sweep", "--variant", "after-reply,keys", "--fault", "timeout", "--depth", "1", "--format",
                       "json")
    rows = {r["variant"]: r for r in __import__("json").loads(out)}
    assert code == 0 and rows["after-reply"]["dups"] > 0 and rows["keys"]["dups"] == 0
    assert rows["keys"]["faults"] == "timeout" and rows["keys"]["uncrashed"] == 6
    code, out, _ = cli("explain", "after-reply+timeout=1-applied")
    assert code == 0 and "NO REPLY in time to create_issue A (no key): the tracker had APPLIED it, #1" in out
    assert "A ×2 (DUPLICATED)" in out
    for bad in ("after-reply+timeout=0-applied", "after-reply+timeout=1", "after-reply+timeout=1-late"):
        code, out, err = cli("explain", bad)
        assert (code, out) == (2, "") and "name the changing request that times out" in err, bad
    code, _, err = cli("explain", "after-reply+timeout=9-lost")
    assert code == 2 and "never acted in it" in err
