"""Flaky scenarios: a loop with a race fails its sweep with every outcome it came to, a loop without one does not.

Determinism is checked on what a loop does, not only on the crash points it passes: the requests it
makes, with their arguments and keys, a key named by its first use in the scenario. The loops are
`tests/racy_loop.py`'s: `racy` saves each fresh key on a helper thread while the request goes out,
`steady` waits for the helper first. Their keys are new in every run, so a check that compared keys
as they are would find `steady` flaky, and one that compared only points would miss `racy`.
"""

import json
import re

import pytest

from crashlab.api import explain, loop, render
from crashlab.engine.sweep import sweep as sweep_setup
from crashlab.errors import Stray
from crashlab.protocols.outcome import Outcome, flaky_outcome
from crashlab.protocols.points import Recorder
from crashlab.protocols.scenario import trace_of
from crashlab.runners import RunnerSpec

from .racy_loop import EFFECTS, racy, steady

REPEAT = 4


def test_a_loop_that_races_to_save_its_key_fails_the_fixture_with_the_worst_it_came_to(crash_sweep):
    result = crash_sweep(racy, EFFECTS, name="racy", repeat=REPEAT, depth=1)
    flaky = [s for s in result.scenarios if s.outcome.flaky]
    assert flaky and result.flaky == len(flaky) and not result.ok
    # Counted by the worst: a check of `dups == 0 and missing == 0` fails too, however the repeats went.
    assert result.dups >= sum(s.outcome.extra for s in flaky) > 0
    assert all(sum(times for _, times in s.outcome.seen) == REPEAT for s in flaky)
    assert any({o.extra for o, _ in s.outcome.seen} == {0, 1} for s in flaky)  # it went both ways
    told = [line for line in result.failures() if "flaky" in line]
    assert told and all(line.endswith(f", repeat={REPEAT})") for line in told)
    assert all("(it came to " in line for line in told)


def test_a_loop_that_waits_for_its_key_is_not_flaky_though_its_keys_are_new_in_every_run(crash_sweep):
    result = crash_sweep(steady, EFFECTS, name="steady", depth=2, repeat=3)
    assert len(result.scenarios) > 12 and result.flaky == 0 and result.ok, result.report()


def test_repeats_that_come_to_the_same_outcome_but_send_other_keys_are_flaky(crash_sweep):
    """Against a keyless service every restart duplicates, saved key or not: only the requests tell the race."""
    result = crash_sweep(racy, EFFECTS, name="racy", tracker="keyless", repeat=REPEAT, depth=1)
    flaky = [s for s in result.scenarios if s.outcome.flaky]
    assert flaky and not result.ok
    assert all(len(s.outcome.seen) == 1 and s.outcome.extra == 1 for s in flaky)  # one outcome, other requests


def test_a_restart_that_sends_another_key_than_the_restart_it_repeats_strays():
    """Without repeats: at depth 2, a restart that dies retraces the restart before it, its requests too."""
    sent = (r"sent request create_issue 'Login fails on Safari' under key '[^']+' \(the scenario's key \d\) \(.*\), "
            r"start after its point \d, where the restart of racy:\d sent request create_issue 'Login fails on Safari' "
            r"under key '[^']+' \(the scenario's key \d\) ")
    with pytest.raises(Stray, match=rf"^racy:\d:\d: the loop is not deterministic: process 2 {sent}"):
        sweep_setup(loop(racy, EFFECTS, name="racy"), RunnerSpec("forked"), depth=2, share=False)


def request(points: Recorder, key: str) -> None:
    points.note("request", "create_issue", call="A", key=key, applied=True, answer=1)


def run_of(*keys: str) -> Recorder:
    """A scenario's events: process k sends `keys[k - 1]` and passes one point."""
    points = Recorder()
    for key in keys:
        points.start_process()
        request(points, key)
        points.hit("accepted")
    return points


def test_a_key_is_named_by_its_first_use_in_the_scenario():
    fresh, again = run_of("5f0c", "5f0c"), run_of("9ab1", "9ab1")  # random keys, a restart that resends its own
    other = run_of("77e2", "c410")  # a restart that lost the key and made another
    assert [trace_of(fresh.events, p) for p in (1, 2)] == [trace_of(again.events, p) for p in (1, 2)]
    assert trace_of(fresh.events, 1) == trace_of(other.events, 1)
    assert trace_of(fresh.events, 2) != trace_of(other.events, 2)
    assert str(trace_of(other.events, 2)[0]) == ("request create_issue A under key 'c410' (the scenario's key 2) "
                                                 "(answer=1, applied=True), start")


def test_a_flaky_outcome_holds_every_outcome_with_how_often_and_counts_the_worst_of_each():
    once, twice, lost = Outcome({}, (), 1, 0, 0), Outcome({"A": 1}, (), 0, 2, 0), Outcome({}, ("B",), 0, 0, 0)
    worst = flaky_outcome([once, twice, once, lost])
    assert worst.seen == ((once, 2), (twice, 1), (lost, 1))
    assert (worst.dups, worst.missing, worst.asks, worst.calls_plus, worst.flaky) == ({"A": 1}, ("B",), 1, 2, 1)


def test_explain_with_repeats_tells_every_outcome_a_flaky_scenario_came_to():
    told = explain(racy, EFFECTS, "racy:1", repeat=16)  # dies as the service commits A: the race decides
    ways = told["flaky"]["outcomes"]
    assert sorted(way["verdict"]["duplicates"].get("A", 0) for way in ways) == [0, 1]
    assert sum(way["times"] for way in ways) == 16
    text = render(told)
    assert re.search(r"^flaky: its 16 repeats (did different things and )?came to 2 outcomes", text, re.M)
    assert re.search(r"^  \d+ of 16: duplicates A ×2; missing none; asks 0, extra model calls 0$", text, re.M)
    assert explain(steady, EFFECTS, "steady:1", repeat=3)["flaky"] is None


@pytest.fixture
def effects_file(tmp_path):
    path = tmp_path / "effects.yaml"
    path.write_text(json.dumps(EFFECTS))  # JSON is YAML
    return str(path)


def test_the_command_line_sweep_of_a_flaky_loop_prints_its_table_and_exits_3(cli, effects_file):
    code, out, err = cli("sweep", "--loop", "tests/racy_loop.py:racy", "--effects", effects_file, "--depth", "1",
                         "--repeat", str(REPEAT), "--format", "json")
    (row,) = json.loads(out)
    assert code == 3 and row["flaky"] > 0 and row["dups"] > 0
    said = (f"{row['flaky']} flaky scenarios: their runs differ" if row["flaky"] > 1 else
            "1 flaky scenario: its runs differ")
    assert err.splitlines()[-1] == (f"crashlab: harness error: {said}, so the table counts the worst each came to "
                                    "(--list flaky names them)")
    assert f"--repeat {REPEAT}" in next(line for line in err.splitlines() if "flaky" in line and "replay" in line)


#: A loop with no crashlab import whose restart, one time in two, sends its first request twice (a retry that raced
#: with the answer), by the luck of os.urandom: its uninterrupted run makes each issue once, so only a restart shows
#: it. It keeps all it keeps in its run directory, and says so (--state-in-run-dir): a shared sweep.
UNLUCKY = '''
import json, os, urllib.request
from pathlib import Path

STEPS = [(f"S{n}", f"Issue {n}") for n in range(1, 9)]

def post(title):
    url = os.environ["CRASHLAB_TRACKER_URL"] + "/issues"
    request = urllib.request.Request(url, json.dumps({"title": title}).encode(), {"Content-Type": "application/json"})
    with urllib.request.urlopen(request) as answer:
        return json.load(answer)["number"]

def main():
    saved = Path(os.environ["CRASHLAB_RUN_DIR"]) / "done.json"
    restarted = saved.exists()
    done = json.loads(saved.read_text()) if restarted else {}
    for step, title in STEPS:
        if step not in done:
            if restarted and os.urandom(1)[0] % 2:
                post(title)
            restarted = False
            done[step] = post(title)
            saved.write_text(json.dumps(done))
'''


@pytest.mark.slow
def test_a_shared_sweep_sees_a_loop_that_duplicates_by_chance_without_being_asked(cli, tmp_path):
    """No --repeat: a shared sweep restarts each state once, from a copy, and would count this loop's duplicates
    by the luck of each restart. It runs a restart from each state a first death left twice (and its check of the
    copies runs a restart again where it differs), so a loop that does not repeat itself fails the sweep, flaky."""
    loop = tmp_path / "unlucky.py"
    loop.write_text(UNLUCKY)
    effects = tmp_path / "effects.yaml"
    effects.write_text("".join(f"S{n}: {{issue: Issue {n}}}\n" for n in range(1, 9)))
    code, _, err = cli("sweep", "--loop", f"{loop}:main", "--effects", str(effects), "--state-in-run-dir", "--depth",
                       "1")
    assert code == 3 and "flaky" in err.splitlines()[-1], err
