"""Your own loop, swept through the public API: marked with crashlab.point, killed for real, counted per effect.

The loops here are the example's (examples/hand_written_loop.py) and a few hostile ones. A sweep must
find the duplicates of a loop that sends no key, none when it sends one, refuse a loop that does not
repeat itself, count a flaky scenario apart, and name a loop's own error.
"""

import importlib.util
import os
import re
import sys
from functools import partial

import pytest

import crashlab
from crashlab.api import explain, render, sweep
from crashlab.engine.points import HarnessError

from .conftest import ROOT

spec = importlib.util.spec_from_file_location("hand_written_loop", ROOT / "examples" / "hand_written_loop.py")
example = importlib.util.module_from_spec(spec)
spec.loader.exec_module(example)
sys.modules["hand_written_loop"] = example  # so a worker process can unpickle its function
EFFECTS = ["A", "B", "C"]


def test_a_point_outside_a_sweep_does_nothing():
    assert crashlab._recorder is None
    crashlab.point("anything")  # no recorder, no crash, no error


def test_a_loop_without_keys_duplicates_where_it_dies_between_the_commit_and_its_save(crash_sweep):
    """The pytest plugin's fixture is the API's sweep."""
    plain = crash_sweep(partial(example.triage, keyed=False), EFFECTS, name="plain")
    points = ("accepted", "returned", "written", "saved")
    assert plain.points == tuple(f"{label}#{k}" for k in (1, 2, 3) for label in points)
    dup_points = {s.crashes[0] for s in plain.scenarios if s.dups}
    assert dup_points == {f"{label}#{k}" for k in (1, 2, 3) for label in points[:3]}  # before the rename
    assert (plain.with_dups, plain.dups, plain.missing, plain.flaky) == (9, 9, 0, [])
    first = "plain:1: killed at accepted#1; restarted and finished; the tracker holds A ×2, B ×1, C ×1"
    assert plain.failures()[0] == first


def test_the_same_loop_with_keys_never_duplicates_nor_loses_an_effect(crash_sweep):
    keyed = crash_sweep(partial(example.triage, keyed=True), EFFECTS)
    assert len(keyed.scenarios) == 12 and keyed.dups == keyed.missing == 0 and keyed.failures() == []


@pytest.mark.slow
def test_killed_twice_the_keyed_loop_is_still_clean_and_the_plain_one_worse(crash_sweep):
    keyed, plain = (crash_sweep(partial(example.triage, keyed=k), EFFECTS, depth=2) for k in (True, False))
    assert len(keyed.scenarios) == len(plain.scenarios) > 12
    assert keyed.dups == keyed.missing == 0 and plain.dups > 9 and plain.missing == 0


def test_a_loop_that_does_not_repeat_itself_is_refused():
    def coin(run):
        if os.urandom(1)[0] < 128:
            crashlab.point("sometimes")
        example.triage(run, keyed=True)

    with pytest.raises(HarnessError, match=r"^coin: your loop is not deterministic: uninterrupted run \d differs"):
        sweep(coin, EFFECTS, name="coin", baselines=12)


@pytest.mark.slow
def test_a_scenario_whose_repeats_disagree_is_flaky_and_counted_apart():
    """A restart that sends its key only sometimes: its scenarios' outcomes differ from repeat to repeat."""

    def restart_flips_a_coin(run):
        example.triage(run, keyed=run.process == 1 or os.urandom(1)[0] < 128)

    swept = sweep(restart_flips_a_coin, EFFECTS, name="flips", repeat=6)
    assert swept.flaky and all("different outcomes in 6 repeats" in s.flaky for s in swept.flaky)
    assert swept.dups == sum(s.dups for s in swept.scenarios if not s.flaky)


def test_an_error_in_your_loop_is_named():
    def broken(run):
        raise KeyError("progress")

    with pytest.raises(HarnessError, match=r"process 1 of your loop failed: KeyError: 'progress' \(test_api.py:\d+\)"):
        sweep(broken, EFFECTS)


def test_bad_options_are_refused():
    with pytest.raises(ValueError, match=r"unknown tracker 'etcd' \(valid: keyed, keyless, lookup, fencing\)"):
        sweep(example.triage, EFFECTS, tracker="etcd")
    with pytest.raises(ValueError, match="at least 1"):
        sweep(example.triage, EFFECTS, depth=0)


@pytest.mark.slow
def test_a_restart_that_strays_from_the_run_it_repeats_is_flaky_and_says_where():
    """A restart (never the first process) that sometimes passes an extra point first: it does not retrace."""

    def restart_strays(run):
        if run.process > 1 and os.urandom(1)[0] < 128:
            crashlab.point("stray")
        example.triage(run, keyed=True)

    swept = sweep(restart_strays, EFFECTS, name="strays", depth=2, repeat=4)
    strays = [s for s in swept.flaky if "passed stray#1 at its point 1, where the run it repeats passed" in s.flaky]
    assert strays and all(len(s.crashes) == 2 for s in strays)  # only a restart that was to die can stray


@pytest.mark.slow
def test_on_two_workers_the_sweep_is_the_same_scenario_by_scenario():
    plain = partial(example.triage, keyed=False)
    assert sweep(plain, EFFECTS, workers=2) == sweep(plain, EFFECTS)


def test_explain_tells_a_scenario_process_by_process_with_what_the_tracker_holds():
    told = explain(partial(example.triage, keyed=False), EFFECTS, "plain:1:1")
    assert [p["ended"] for p in told["processes"]] == [
        "killed at accepted#1, its point 1", "killed at accepted#1, its point 1", "finished after 12 points"]
    assert told["dups"] == {"A": 2} and told["missing"] == []
    held = [(r["kind"], r["effect"]) for r in told["records"]]
    assert held == [("issue", "A")] * 3 + [("issue", "B"), ("comment", "C")]
    assert render(told).splitlines()[-1] == "verdict: duplicates A +2; nothing missing"


@pytest.mark.parametrize("scenario, problem", [
    ("plain", "is not NAME:I[:J...]"), ("plain:0", "is not NAME:I[:J...]"), ("plain:x", "is not NAME:I[:J...]"),
    ("plain:13", "the uninterrupted run reaches points 1..12: no point 13"),
    ("plain:1:13", "the restart of plain:1 reaches points 1..12: no point 13"),
])
def test_explain_refuses_a_scenario_the_loop_does_not_have(scenario, problem):
    with pytest.raises(ValueError, match=re.escape(problem)):
        explain(partial(example.triage, keyed=False), EFFECTS, scenario)
