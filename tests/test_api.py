"""Your own loop, swept through the public API: marked with crashlab.point, killed for real, counted per effect.

The loops here are the example's (examples/hand_written_loop.py) and a few hostile ones. A sweep must
find the duplicates of a loop that sends no key, none when it sends one, refuse a loop that does not
repeat itself, count a flaky scenario by the worst it came to, and name a loop's own error.
"""

import importlib.util
import os
import re
import sys
from functools import partial
from pathlib import Path

import pytest

import crashlab
from crashlab.api import explain, loop, render, sweep
from crashlab.engine.sweep import sweep as sweep_setup
from crashlab.errors import BadInput, Stray
from crashlab.protocols import points as recorders
from crashlab.protocols.points import HarnessError
from crashlab.runners import RunnerSpec

from .conftest import ROOT
from .helpers import results

spec = importlib.util.spec_from_file_location("hand_written_loop", ROOT / "examples" / "hand_written_loop.py")
example = importlib.util.module_from_spec(spec)
spec.loader.exec_module(example)
sys.modules["hand_written_loop"] = example  # so a worker process can unpickle its function
EFFECTS = ["A", "B", "C"]


def test_a_point_outside_a_sweep_does_nothing():
    assert recorders._recorder is None
    crashlab.point("anything")  # no recorder, no crash, no error


def test_a_loop_without_keys_duplicates_where_it_dies_between_the_commit_and_its_save(crash_sweep):
    """The pytest plugin's fixture is the API's sweep."""
    plain = crash_sweep(partial(example.triage, keyed=False), EFFECTS, name="plain", depth=1)
    points = ("accepted", "returned", "written", "saved")
    uninterrupted = plain.points
    assert tuple(uninterrupted) == tuple(f"{label}#{k}" for k in (1, 2, 3) for label in points)
    assert [s.points for s in plain.scenarios] == [(p,) for p in uninterrupted]  # each point killed once
    dup_points = {s.points[0] for s in plain.scenarios if s.outcome.dups}
    assert dup_points == {f"{label}#{k}" for k in (1, 2, 3) for label in points[:3]}  # before the rename
    assert (plain.with_dups, plain.dups, plain.missing, plain.flaky) == (9, 9, 0, 0) and not plain.ok
    first = ("A made twice when the process dies anywhere from `accepted#1` to `written#1` (3 scenarios, plain:1 to "
             "plain:3); replay: crashlab.api.explain(entry, effects, 'plain:1')")
    assert len(plain.failures()) == 3 and plain.failures()[0] == first  # one line per window, not per scenario


def test_the_same_loop_with_keys_never_duplicates_nor_loses_an_effect(crash_sweep):
    keyed = crash_sweep(partial(example.triage, keyed=True), EFFECTS, depth=1)
    assert len(keyed.scenarios) == 12 and keyed.dups == keyed.missing == 0 and keyed.failures() == [] and keyed.ok


@pytest.mark.slow
def test_killed_twice_the_keyed_loop_is_still_clean_and_the_plain_one_worse(crash_sweep):
    keyed, plain = (crash_sweep(partial(example.triage, keyed=k), EFFECTS, depth=2) for k in (True, False))
    assert len(keyed.scenarios) == len(plain.scenarios) > 12
    assert keyed.dups == keyed.missing == 0 and plain.dups > 9 and plain.missing == 0


def test_a_loop_that_does_not_repeat_itself_is_refused(tmp_path):
    counter = tmp_path / "runs"

    def every_third_run_strays(run):
        runs = int(counter.read_text()) + 1 if counter.exists() else 1
        counter.write_text(str(runs))
        if runs % 3 == 0:
            crashlab.point("sometimes")
        example.triage(run, keyed=True)

    with pytest.raises(Stray, match=r"^strays: the loop is not deterministic: process 1 passed \w+#\d+ \(.*\) at its "
                                    r"point \d+, where uninterrupted run \d+ passed (\w+#\d+ \(.*\)|nothing more)$"):
        sweep(every_third_run_strays, EFFECTS, name="strays", baselines=3, depth=1)


@pytest.mark.slow
def test_a_scenario_whose_repeats_disagree_is_flaky_and_counted_by_the_worst_it_came_to():
    """A restart that sends its key only sometimes: its scenarios' outcomes differ from repeat to repeat."""

    def restart_flips_a_coin(run):
        example.triage(run, keyed=run.process == 1 or os.urandom(1)[0] < 128)

    swept = sweep(restart_flips_a_coin, EFFECTS, name="flips", repeat=6, depth=1)
    flaky = [s for s in swept.scenarios if s.outcome.flaky]
    assert swept.flaky == len(flaky) > 0 and not swept.ok
    assert all(s.outcome.flaky == 1 and sum(n for _, n in s.outcome.seen) == 6 for s in flaky)
    # Each by its worst: some duplicated in one repeat and not in another; where a restart's death left no
    # request to resend, its repeats agree on the outcome and differ only in the keys they sent.
    assert all(s.outcome.extra == max(o.extra for o, _ in s.outcome.seen) for s in flaky)
    assert any(s.outcome.extra > 0 and min(o.extra for o, _ in s.outcome.seen) == 0 for s in flaky)
    assert swept.dups == sum(s.outcome.extra for s in swept.scenarios)
    assert swept.missing == sum(len(s.outcome.missing) for s in swept.scenarios)
    said = [re.search(r"\((\d+) scenarios?, ", line) for line in swept.failures() if "flaky: its repeats" in line]
    assert sum(int(m[1]) for m in said if m) == len(flaky)  # each flaky scenario is named as flaky, in its window


def test_an_error_in_your_loop_is_named():
    def broken(run):
        raise KeyError("progress")

    with pytest.raises(HarnessError, match=r"^loop: process 1 failed: KeyError: 'progress' \(test_api.py:\d+\)"):
        sweep(broken, EFFECTS, depth=1)


def test_bad_options_are_refused():
    with pytest.raises(ValueError, match=r"unknown tracker 'etcd' \(valid: keyed, keyless, lookup, fencing\)"):
        sweep(example.triage, EFFECTS, tracker="etcd", depth=1)
    with pytest.raises(ValueError, match="depth must be a whole number from 1 to 8"):
        sweep(example.triage, EFFECTS, depth=0)


def every_seventh_restart_strays(counter: Path):
    """A loop whose restart passes an extra point first on every seventh restart of the sweep, as a loop whose
    restart reads a clock or a cache might. It is counted in a file, so the forked processes share the count, and
    the sweep (one worker) makes its restarts in one order, so that the test says the same every time it runs."""

    def restart_strays(run):
        if run.process > 1:
            restarts = int(counter.read_text()) + 1 if counter.exists() else 1
            counter.write_text(str(restarts))
            if restarts % 7 == 0:
                crashlab.point("stray")
        example.triage(run, keyed=True)

    return restart_strays


@pytest.mark.slow
def test_a_restart_that_strays_from_the_run_it_repeats_is_flaky_and_says_where(tmp_path):
    """A restart (never the first process) that sometimes passes an extra point first: it does not retrace."""
    swept = sweep(every_seventh_restart_strays(tmp_path / "counted"), EFFECTS, name="strays", depth=2, repeat=4)
    strays = [s for s in swept.scenarios if s.outcome.flaky]
    # A restart to die strays from the restart it repeats; a restart that finishes, from its own repeats.
    assert any(len(s.crashes) == 2 for s in strays) and any(len(s.crashes) == 1 for s in strays)
    assert swept.flaky == len(strays) < len(swept.scenarios)
    # Where it strayed: the engine's own verdict on the same loop, which a sweep of crashlab's loops fails on.
    where = (r"^strays:\d+:\d+: the loop is not deterministic: process 2 passed (stray#1 \(.*\) at its point 1, where "
             r"the restart of strays:\d+ passed \w+#1 |\w+#1 \(.*\) at its point 1, where the restart of "
             r"strays:\d+ passed stray#1 )")
    restart_strays = every_seventh_restart_strays(tmp_path / "counted again")
    with pytest.raises(Stray, match=where):
        sweep_setup(loop(restart_strays, EFFECTS, name="strays"), RunnerSpec("forked"), depth=2, share=False, repeat=4)


@pytest.mark.slow
def test_on_two_workers_the_sweep_is_the_same_scenario_by_scenario():
    plain = partial(example.triage, keyed=False)
    two, one = sweep(plain, EFFECTS, workers=2, depth=1), sweep(plain, EFFECTS, depth=1)
    assert (results(two.sweep), two.row()) == (results(one.sweep), one.row())


def test_explain_tells_a_scenario_process_by_process_with_what_the_tracker_holds():
    told = explain(partial(example.triage, keyed=False), EFFECTS, "plain:1:1")
    assert [(c["process"], c["index"], c["label"]) for c in told["crashes"]] == [(1, 1, "accepted"), (2, 1, "accepted")]
    assert [p["process"] for p in told["processes"]] == [1, 2, 3]
    assert [line.split()[0] for line in told["processes"][2]["events"]] == [str(k) for k in range(1, 13)]  # finished
    verdict = told["verdict"]
    assert verdict["duplicates"] == {"A": 2} and verdict["missing"] == []
    assert verdict["tracker"] == [
        "issue #1 (A)", "issue #2 (A)", "issue #3 (A)", "issue #4 (B)", "comment #1 on #3 (C)"]
    assert render(told).split("\nverdict\n")[1].splitlines()[2:4] == [
        "  duplicates:    A ×3 (DUPLICATED)", "  missing:       none"]


def test_explain_tells_what_each_process_of_your_loop_found_how_it_ended_and_what_it_made():
    told = explain(partial(example.triage, keyed=False), EFFECTS, "plain:4:2")  # B filed, then killed before saved
    saved, restart, last = told["processes"]
    assert (saved["found"], saved["held"]) == ("no file", [])
    assert (restart["found"], restart["held"]) == ("progress.json 8 B", ["issue #1 (A)"])  # {"A": 1}
    assert (restart["ended"], restart["made"]) == ("killed at its point 2 (returned)", ["issue #2 (B) with no key"])
    assert (last["found"], last["held"]) == ("progress.json 8 B", ["issue #1 (A)", "issue #2 (B)"])
    assert last["ended"] == "exit status 0: the loop returned"
    assert last["made"] == ["issue #3 (B) with no key", "comment #1 on #1 (C) with no key"]
    assert told["advice"] == []  # it marks points of its own, and its restarts make what is missing


@pytest.mark.parametrize("scenario, problem", [
    ("plain", "scenario 'plain' names no crash: add one, as plain:1"),
    ("plain:0", "plain passes crash points 1..12 on job plain: no point 0"),
    ("plain:x", "malformed scenario ID 'plain:x' (expected SLUG:I, SLUG:I:J"),
    ("plain:13", "plain passes crash points 1..12 on job plain: no point 13"),
    ("plain:1:13", "the restart of plain:1 on job plain reaches points 1..12: no point 13"),
])
def test_explain_refuses_a_scenario_the_loop_does_not_have(scenario, problem):
    with pytest.raises(ValueError, match=re.escape(problem)):
        explain(partial(example.triage, keyed=False), EFFECTS, scenario)


def does_nothing(run):
    """A loop that acts on nothing: its sweep has no scenario, and would count no duplicate."""


def misspells_its_effect(run):
    run.tracker.create_issue("AA", "Login fails on Safari")


def files_twice(run):
    run.tracker.create_issue("A", "Login fails on Safari")
    run.tracker.create_issue("A", "Login fails on Safari")


@pytest.mark.parametrize(("entry", "made"), [
    (does_nothing, "it made A not at all"),
    (misspells_its_effect, "it made A not at all; records for AA, which is no intended effect"),
    (files_twice, "it made A 2 times"),
])
def test_a_loop_whose_uninterrupted_run_does_not_make_each_effect_once_is_refused_not_passed(entry, made):
    with pytest.raises(BadInput, match="its uninterrupted run must make each intended effect") as refused:
        sweep(entry, ["A"], name="mine", depth=1)
    assert str(refused.value) == f"mine: its uninterrupted run must make each intended effect (A) exactly once, and {made}"


# One API: the command line's defaults, name rules and bounds, and a row a person can read.


def test_the_api_sweeps_as_deep_as_the_command_line_by_default():
    import inspect

    from crashlab.cli.sweep import sweep as command

    depth = next(p for p in command.params if p.name == "depth")
    assert inspect.signature(sweep).parameters["depth"].default == depth.default == 2


@pytest.mark.parametrize(("argument", "value"), [("depth", 1.5), ("depth", True), ("depth", 0), ("depth", 9),
                                                 ("repeat", "2"), ("workers", 0), ("workers", 2000),
                                                 ("baselines", None)])
def test_a_count_the_command_line_would_refuse_is_refused_before_anything_runs(argument, value, tmp_path):
    ran = tmp_path / "ran"

    def entry() -> None:  # a real process would leave this file behind
        ran.touch()

    with pytest.raises(BadInput, match=f"^{argument} must be a whole number from 1"):
        sweep(entry, EFFECTS, **{argument: value})
    assert not ran.exists()


def test_a_loop_named_as_python_names_functions_is_named_as_the_command_line_names_it():
    assert loop(example.triage, EFFECTS, name="plain_Loop").variant.slug == "plain-loop"
    with pytest.raises(BadInput, match=r"^name '1 loop': a scenario ID starts with it, so it must be a letter, then "
                                       r"letters, digits, dashes or underscores \(plain_loop is plain-loop\)$"):
        loop(example.triage, EFFECTS, name="1 loop")


def test_a_row_prints_as_a_person_reads_it(triage):
    from crashlab.loops import VARIANTS
    from crashlab.protocols.scenario import Setup

    row = sweep_setup(Setup(VARIANTS["after-reply"], triage), RunnerSpec()).row()
    assert str(row) == (f"after-reply (save after the reply), crash: {row.scenarios:,} scenarios, {row.distinct} "
                        f"distinct states, {row.windows} windows; with dups {row.with_dups}, dups {row.dups}, "
                        f"calls+ {row.calls_plus}")
    assert row.scenarios == 688 and row.dups == 360  # the book's cells, as the sweep counts them


def second_run_files_in_another_order(counter: Path):
    """A loop that files A then B, except in its second uninterrupted run, which files B then A: what two runs of a
    loop that files both at once on threads may do. It imports nothing of crashlab's internals."""

    def files_both(run):
        runs = int(counter.read_text()) + 1 if counter.exists() else 1
        counter.write_text(str(runs))
        order = ("B", "A") if runs == 2 else ("A", "B")
        for step in order:
            run.tracker.create_issue(step, f"issue {step}", key=f"files-both-1:{step}")
            crashlab.point("returned")

    return files_both


def test_a_loop_whose_runs_do_the_same_in_another_order_is_told_to_let_crashlab_schedule_it(tmp_path):
    with pytest.raises(Stray) as refused:
        sweep(second_run_files_in_another_order(tmp_path / "runs"), ["A", "B"], name="both", depth=1)
    said = str(refused.value)
    assert "the two runs did the same things in another order" in said and "--scheduled" in said
    # The first difference side by side, each request under the loop's own key (not "key 1", the first key used).
    assert ("process 1 sent request create_issue B under key 'files-both-1:B' (the scenario's key 1)" in said
            and "where uninterrupted run 1 sent request create_issue A under key 'files-both-1:A' (the scenario's key 1)"
            in said)


def test_a_loop_that_strays_otherwise_is_told_where_to_look(tmp_path):
    """Every seventh restart passes a point no other run passes: not an order, a difference."""
    with pytest.raises(Stray, match="look for what it reads that changes from run to run"):
        sweep_setup(loop(every_seventh_restart_strays(tmp_path / "counted"), EFFECTS, name="strays"),
                    RunnerSpec("forked"), depth=2, share=False)
