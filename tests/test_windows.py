"""A sweep's failures, grouped into windows: one line per span of crash points where a death does the same harm.

A window is a maximal run of consecutive crash points of one process (the same earlier deaths, the
same choices) whose scenarios fail the same way. A passing scenario, a different failure or a gap
ends it; every failing scenario lands in exactly one window, and a passing one in none.
"""

from dataclasses import dataclass, replace
from functools import partial

import pytest
from hypothesis import given
from hypothesis import strategies as st

import crashlab
from crashlab.api import sweep
from crashlab.engine.sweep import sweep as sweep_setup
from crashlab.loops import VARIANTS
from crashlab.loops.designs import DESIGNS, DesignLoop
from crashlab.protocols.outcome import Outcome, flaky_outcome
from crashlab.protocols.scenario import ScenarioResult, Setup, scenario_id
from crashlab.report.windows import Window, describe, windows
from crashlab.runners import RunnerSpec

from .test_api import EFFECTS, example

POINTS = [f"{label}#{k}" for k in (1, 2, 3) for label in ("accepted", "returned", "written", "saved")]
PASSED = Outcome({}, (), 0, 0, 0)


def outcome(dups: dict[str, int] | None = None, missing: tuple[str, ...] = (), **more: int) -> Outcome:
    return Outcome(dups or {}, missing, 0, 0, 0, **more)


TWICE = outcome({"A": 1})
#: A scenario whose repeats made A twice, three times, and once: counted by the worst, and flaky.
FLAKY = flaky_outcome([TWICE, outcome({"A": 2}), PASSED, TWICE])


def scenario(*crashes: int, did: Outcome = PASSED, tags: str = "", choices: tuple = ()) -> ScenarioResult:
    """Scenario ``loop:I:J...`` whose every process died at the crashes' points of the example's run."""
    points = tuple(POINTS[i - 1] for i in crashes)
    return ScenarioResult(scenario_id("loop", tags, crashes, choices), "loop", crashes, points, did, 0, 0, choices)


def replay(scenario_id: str) -> str:
    return f"crashlab explain {scenario_id}"


def test_consecutive_points_that_fail_the_same_way_are_one_window():
    swept = [scenario(1), scenario(2, did=TWICE), scenario(3, did=TWICE), scenario(4, did=TWICE), scenario(5)]
    assert windows(swept) == [Window((), "returned#1", "saved#1", "loop:2", "loop:4", 3, "A made twice")]


def test_a_passing_scenario_between_two_failing_ones_splits_them():
    swept = [scenario(1, did=TWICE), scenario(2), scenario(3, did=TWICE)]
    assert [(w.first_id, w.last_id, w.scenarios) for w in windows(swept)] == [("loop:1", "loop:1", 1),
                                                                              ("loop:3", "loop:3", 1)]


def test_a_different_failure_splits_the_span():
    both, thrice = outcome({"A": 1}, ("C",)), outcome({"A": 2})
    swept = [scenario(1, did=TWICE), scenario(2, did=TWICE), scenario(3, did=both), scenario(4, did=thrice)]
    assert [(w.first_id, w.last_id, w.failure) for w in windows(swept)] == [
        ("loop:1", "loop:2", "A made twice"),
        ("loop:3", "loop:3", "A made twice, C lost"),
        ("loop:4", "loop:4", "A made 3 times"),
    ]


def test_the_same_failure_after_a_gap_in_the_points_is_another_window():
    swept = [scenario(1, did=TWICE), scenario(3, did=TWICE)]  # no scenario crashes at point 2
    assert [w.first_id for w in windows(swept)] == ["loop:1", "loop:3"]


def test_at_depth_two_each_earlier_death_has_windows_of_its_own():
    """In sweep order a first crash's restarts come between it and the next first crash: neither splits the other."""
    swept = [
        scenario(1, did=TWICE),
        scenario(1, 1, did=TWICE), scenario(1, 2, did=TWICE), scenario(1, 3),
        scenario(2, did=TWICE),
        scenario(2, 1, did=TWICE), scenario(2, 2, did=TWICE),
        scenario(3),
        scenario(3, 1), scenario(3, 2, did=outcome(missing=("B",))),
    ]
    assert windows(swept) == [
        Window((), "accepted#1", "returned#1", "loop:1", "loop:2", 2, "A made twice"),
        Window(("accepted#1",), "accepted#1", "returned#1", "loop:1:1", "loop:1:2", 2, "A made twice"),
        Window(("returned#1",), "accepted#1", "returned#1", "loop:2:1", "loop:2:2", 2, "A made twice"),
        Window(("written#1",), "returned#1", "returned#1", "loop:3:2", "loop:3:2", 1, "B lost"),
    ]


def test_flaky_scenarios_make_windows_of_their_own():
    swept = [scenario(1, did=TWICE), scenario(2, did=FLAKY), scenario(3, did=FLAKY), scenario(4, did=TWICE)]
    assert [(w.first_id, w.scenarios, w.failure) for w in windows(swept)] == [
        ("loop:1", 1, "A made twice"),
        ("loop:2", 2, "A made 3 times, flaky: its repeats disagreed or a process strayed (it came to A made twice / "
                      "A made 3 times / no harm)"),
        ("loop:4", 1, "A made twice"),
    ]


def test_wrong_results_orphans_and_a_stuck_run_are_failures_too():
    swept = [scenario(1, did=outcome(wrong=("C",))), scenario(2, did=outcome(orphans=2)),
             scenario(3, did=outcome(stuck=1)), scenario(4, did=outcome(orphans=1))]
    assert [w.failure for w in windows(swept)] == ["C names the wrong record", "2 stray records no effect accounts for",
                                                   "stuck: the run cannot go on",
                                                   "1 stray record no effect accounts for"]


def test_a_sweep_without_failures_has_no_windows():
    """Questions to a person and extra model calls are what recovery costs, not failures."""
    costly = Outcome({}, (), 3, 2, 1)
    assert windows([]) == []
    assert windows(scenario(i, did=costly if i % 2 else PASSED) for i in range(1, 13)) == []  # a stream will do


def test_other_fault_settings_and_other_choices_never_share_a_window():
    swept = [scenario(1, did=TWICE, tags="+cut"), scenario(2, did=TWICE, tags="+cut=2"),
             scenario(2, did=TWICE, tags="+cut"),
             scenario(3, did=TWICE, choices=((1,),)), scenario(3, did=TWICE, choices=((2,),)),
             scenario(4, did=TWICE, choices=((1,),))]
    assert [(w.first_id, w.last_id) for w in windows(swept)] == [
        ("loop+cut:1", "loop+cut:2"), ("loop+cut=2:2", "loop+cut=2:2"), ("loop:3~1", "loop:4~1"),
        ("loop:3~2", "loop:3~2")]


def test_one_crash_point_whose_death_leaves_state_after_state_doing_the_same_harm_is_one_window():
    """A late request lands at the restart's point 1, 2, 3, ...: the same duplicate each time is one line."""
    swept = [*(scenario(1, did=TWICE, choices=((k,),)) for k in (1, 2, 3)), scenario(1, choices=((4,),)),
             scenario(1, did=TWICE, choices=((5,),)), scenario(3, did=TWICE, choices=((1,),))]
    found = windows(swept)
    assert [(w.first_id, w.last_id, w.scenarios, w.states) for w in found] == [
        ("loop:1~1", "loop:1~3", 3, "~1 to ~3"), ("loop:1~5", "loop:1~5", 1, ""), ("loop:3~1", "loop:3~1", 1, "")]
    assert describe(found[0], replay) == ("A made twice when the process dies at `accepted#1`, in each state its "
                                          "death leaves from ~1 to ~3 (3 scenarios, loop:1~1 to loop:1~3); "
                                          "replay: crashlab explain loop:1~1")


def test_a_window_reads_as_a_sentence_with_the_command_that_replays_it():
    at_one = Window((), "accepted#1", "accepted#1", "loop:1", "loop:1", 1, "A made twice")
    assert describe(at_one, replay) == ("A made twice when the process dies at `accepted#1` (1 scenario, loop:1); "
                                        "replay: crashlab explain loop:1")
    span = Window((), "accepted#2", "written#2", "loop:5", "loop:7", 3, "B made twice, C lost")
    assert describe(span, replay) == ("B made twice, C lost when the process dies anywhere from `accepted#2` to "
                                      "`written#2` (3 scenarios, loop:5 to loop:7); replay: crashlab explain loop:5")
    after = Window(("saved#2",), "accepted#1", "saved#1", "loop:8:1", "loop:8:4", 4, "C made twice")
    assert describe(after, replay) == ("C made twice when, after a first death at `saved#2`, the restart dies anywhere "
                                       "from `accepted#1` to `saved#1` (4 scenarios, loop:8:1 to loop:8:4); "
                                       "replay: crashlab explain loop:8:1")
    third = Window(("saved#2", "accepted#1"), "returned#1", "returned#1", "loop:8:1:2", "loop:8:1:2", 1, "C lost")
    assert describe(third, replay) == ("C lost when, after deaths at `saved#2` then `accepted#1`, the third process "
                                       "dies at `returned#1` (1 scenario, loop:8:1:2); "
                                       "replay: crashlab explain loop:8:1:2")
    uncrashed = Window((), "", "", "loop+timeout", "loop+timeout", 1, "A lost")
    assert describe(uncrashed, replay) == ("A lost with no process dying (1 scenario, loop+timeout); "
                                           "replay: crashlab explain loop+timeout")


FAILURES = [PASSED, TWICE, outcome(missing=("C",)), FLAKY]


@given(st.lists(st.sampled_from(range(len(FAILURES))), max_size=12))
def test_windows_partition_the_failing_scenarios_into_maximal_spans(kinds):
    swept = [scenario(i, did=FAILURES[k]) for i, k in enumerate(kinds, start=1)]
    found = windows(swept)
    spans = [kinds[int(w.first_id[5:]) - 1:int(w.last_id[5:])] for w in found]
    assert [len(span) for span in spans] == [w.scenarios for w in found]
    assert all(len(set(span)) == 1 and span[0] for span in spans)  # each the same failure throughout
    assert sum(w.scenarios for w in found) == sum(1 for k in kinds if k)  # every failing one, once
    for w in found:  # maximal: the points either side fail otherwise, or pass
        before, after = int(w.first_id[5:]) - 2, int(w.last_id[5:])
        assert before < 0 or kinds[before] != kinds[before + 1]
        assert after >= len(kinds) or kinds[after] != kinds[after - 1]


def test_a_real_sweep_windows_exactly_its_failing_scenarios():
    """The example's loop without keys duplicates an effect wherever it dies between the commit and its save."""
    swept = sweep(partial(example.triage, keyed=False), EFFECTS, name="plain", depth=1)
    scenarios = swept.scenarios
    failing = [s.id for s in scenarios
               if (o := s.outcome).dups or o.missing or o.wrong or o.orphans or o.stuck or o.flaky]
    found = windows(scenarios)
    assert sum(w.scenarios for w in found) == len(failing) == 9
    ids = [s.id for s in scenarios]
    covered = [i for w in found for i in ids[ids.index(w.first_id):ids.index(w.last_id) + 1]]
    assert covered == failing
    assert [describe(w, replay) for w in found] == [
        f"{effect} made twice when the process dies anywhere from `accepted#{k}` to `written#{k}` "
        f"(3 scenarios, plain:{4 * k - 3} to plain:{4 * k - 1}); replay: crashlab explain plain:{4 * k - 3}"
        for k, effect in enumerate(EFFECTS, start=1)]


class LogsAfterEachCall(DesignLoop):
    """The after-reply design, passing `noops` crash points where nothing durable happens (a log line) after
    each call returns: between the tracker's commit and the save, where a death duplicates."""

    noops = 0

    def make_call(self, call, results):
        made = super().make_call(call, results)
        for _ in range(self.noops):
            crashlab.point("logged")
        return made


@dataclass(frozen=True)
class Logging:
    """The entry point of the after-reply design marked `noops` times more densely."""

    noops: int

    def __call__(self, run):
        loop = LogsAfterEachCall(DESIGNS["after-reply"], run)
        loop.noops = self.noops
        loop.run()


@pytest.mark.parametrize("share", [True, False])
def test_the_windows_count_does_not_grow_with_how_densely_a_loop_is_marked(triage, share):
    """The scenarios and duplicates grow with each no-op point; the windows and distinct states do not."""
    rows = [sweep_setup(Setup(replace(VARIANTS["after-reply"], slug=f"logs-{n}", entry=Logging(n)), triage),
                        RunnerSpec(), share=share).row() for n in (0, 1, 3)]
    assert rows[0].scenarios < rows[1].scenarios < rows[2].scenarios
    assert rows[0].dups < rows[1].dups < rows[2].dups
    assert rows[0].windows == rows[1].windows == rows[2].windows > 0
    assert rows[0].distinct == rows[1].distinct == rows[2].distinct


# Causes: above the windows, one line for each harm a death adds, wherever the death falls.


def test_each_cause_is_what_a_death_adds_and_a_harm_that_needs_no_new_death_is_no_cause_of_its_own(triage):
    from crashlab.report.windows import added, causes

    swept = sweep_setup(Setup(VARIANTS["after-reply"], triage), RunnerSpec())
    found = causes(swept.scenarios())
    assert [c.harm for c in found] == ["A made again", "B made again", "C made again"]
    by_id = {s.id: s for s in swept.scenarios()}
    adding = [s for s in swept.scenarios() if s.outcome.dups and
              added(s.outcome, by_id[scenario_id(s.variant, "", s.crashes[:-1])].outcome if len(s.crashes) > 1 else
                    None)]
    assert sum(c.scenarios for c in found) == len(adding) < sum(1 for s in swept.scenarios() if s.outcome.dups)
    assert sum(c.windows for c in found) <= len(windows(swept.scenarios()))
    assert found[0].first_id == "after-reply:6"  # the shallowest scenario that does the harm replays it


def test_a_cause_reads_as_a_sentence_with_the_command_that_replays_it():
    from crashlab.report.windows import Cause, tell

    cause = Cause("C made again", ("accepted#3", "answered#3", "accepted#1"), 12, 40, "plain:7")
    assert tell(cause, lambda sid: f"crashlab explain {sid}") == (
        "C made again whenever a process dies at `accepted#3`, `answered#3` or `accepted#1` (12 windows, "
        "40 scenarios); replay: crashlab explain plain:7")


ONE_CAUSE = '''
import json, os, urllib.request
from pathlib import Path

def post(title, key):
    headers = {"Content-Type": "application/json", **({"Idempotency-Key": key} if key else {})}
    request = urllib.request.Request(os.environ["CRASHLAB_TRACKER_URL"] + "/issues",
                                     json.dumps({"title": title, "body": ""}).encode(), headers)
    with urllib.request.urlopen(request, timeout=30) as answer:
        return json.load(answer)["number"]

def files_two():
    """Files A with a key and B without one: only B can be made twice."""
    saved = Path(os.environ["CRASHLAB_RUN_DIR"]) / "done.json"
    done = json.loads(saved.read_text()) if saved.exists() else {}
    for step, key in (("A", "run-1:A"), ("B", None)):
        if step not in done:
            done[step] = post(f"issue {step}", key)
            saved.write_text(json.dumps(done))
'''


def test_a_depth_two_sweep_of_a_loop_with_one_cause_of_duplicates_prints_one_cause_above_its_windows(tmp_path, cli):
    (tmp_path / "one_cause.py").write_text(ONE_CAUSE)
    (tmp_path / "effects.yaml").write_text("A: {issue: issue A}\nB: {issue: issue B}\n")
    code, _, err = cli("sweep", "--loop", f"{tmp_path}/one_cause.py:files_two", "--effects",
                       f"{tmp_path}/effects.yaml", "--depth", "2")
    assert code == 0, err
    lines = err.splitlines()
    assert lines[0].startswith("1 cause ") and lines[1].startswith("  B made again whenever a process dies at ")
    assert lines[2].startswith("the windows") and len(lines) > 4  # several windows, one cause
