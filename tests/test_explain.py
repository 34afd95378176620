"""From the table to one scenario: IDs, the crash points, the story, lists and results on disk."""

import json
import os
import platform
import re

import pytest

from crashlab.job import load_job
from crashlab.loops import VARIANTS
from crashlab.protocols.scenario import ScenarioError
from crashlab.report import story as stories
from crashlab.report.story import point_rows

from .conftest import SCENARIOS
from .helpers import baseline_calls, scenario


def find_scenario(scenario_id, job):
    return stories.find_scenario(scenario_id, job, VARIANTS)[0]


def story(run):
    return stories.story(run, baseline_calls(run.setup.variant.slug, run.setup.job))


@pytest.fixture(scope="module")
def job():
    return load_job(SCENARIOS / "triage.yaml")


def test_scenario_ids_name_the_crash_points_one_based(job):
    assert find_scenario("after-reply:6", job).id == "after-reply:6"
    run = find_scenario("keys-markers:9:3", job)
    assert run.crashes == (9, 3)
    assert [(e.process, e.index) for e in run.points.crashes()] == [(1, 9), (2, 3)]


@pytest.mark.parametrize(
    ("scenario_id", "message"),
    [
        ("after-reply", "scenario 'after-reply' names no crash: add one, as after-reply:1"),
        ("after-reply::3", "malformed scenario ID 'after-reply::3' (expected SLUG:I, SLUG:I:J and so on"),
        ("after-reply:x", "malformed"),
        ("nope:3", "unknown variant 'nope' (valid: per-turn, after-reply, keys, markers, keys-markers, per-turn-keys,"),
        ("after-reply:3~1", "~S names the state a death left under a fault that leaves several, and this scenario has "
                            "none (a fault's choice for the whole scenario is its value: SLUG+FAULT=VALUE:I)"),
        ("after-reply+power-cut=file:3", "under power-cut every crash names the state its death left, one number "
                                         "each: I~S"),
        ("after-reply+nope:3", "unknown fault 'nope' (valid: crash,"),
        ("after-reply+power-cut=fast:3~1", "--sync 'fast' is not one of none, file, full"),
        ("after-reply+crash:3", "+crash names no fault"),
        ("after-reply:0", "after-reply passes crash points 1..34 on job triage: no point 0"),
        ("markers:44", "markers passes crash points 1..43 on job triage: no point 44"),
        ("after-reply:6:99", "the restart of after-reply:6 on job triage reaches points 1..31: no point 99"),
        ("after-reply:34:1", "reaches no points (the run was already finished)"),
    ],
)
def test_a_bad_scenario_id_gives_the_valid_choices(job, scenario_id, message):
    with pytest.raises(ScenarioError) as error:
        find_scenario(scenario_id, job)
    assert message in str(error.value)


def test_points_say_what_is_durable_at_each_one(job):
    rows = point_rows(scenario("after-reply", job, ()))
    assert len(rows) == 34
    accepted = next(r for r in rows if r["label"] == "accepted")
    assert (accepted["index"], accepted["occurrence"], accepted["call"], accepted["tool"]) == (6, 1, "A", "create_issue")
    assert accepted["checkpoint"] == "T1 open A:- B:-"  # A's result is not on disk
    assert accepted["tracker"] == ["issue #1 (A)"]  # but the tracker holds issue A
    assert rows[0]["checkpoint"] == "nothing" and rows[-1]["checkpoint"].endswith("finished")


def test_the_after_reply_duplicate_tells_its_story(job):
    told = story(find_scenario("after-reply:6", job))
    assert told["crashes"] == [{"process": 1, "index": 6, "label": "accepted", "where": "turn 1 call A (create_issue)"}]
    assert [p["found"] for p in told["processes"]] == ["nothing", "T1 open A:- B:-"]
    first = told["processes"][0]["events"]
    assert "create_issue A (no key): the tracker APPLIES it, #1" in first[-2]
    assert "CRASH at point 6 (accepted)" in first[-1]
    assert told["verdict"]["duplicates"] == {"A": 1}
    assert told["verdict"]["why"] == ["A was sent 2 times (by process 1, 2): the tracker applied it 2×"]


def test_the_markers_story_shows_the_question_and_its_answer(job):
    told = story(find_scenario("markers:8", job))  # A's marker saved, A not yet sent
    restart = "\n".join(told["processes"][1]["events"])
    assert "the ladder says ASK" in restart
    assert "ASKS THE PERSON: Did call A (create_issue) reach the tracker? → no" in restart
    assert told["verdict"]["asks"] == 1


def test_the_keyed_repeat_is_answered_without_change(job):
    told = story(find_scenario("keys-markers:10", job))  # A accepted, result not saved
    restart = "\n".join(told["processes"][1]["events"])
    assert "the ladder says RERUN" in restart
    assert "the tracker knows the key, answers #1, changes nothing" in restart
    assert told["verdict"]["duplicates"] == {} and told["verdict"]["asks"] == 0


def test_a_lookup_spares_the_person():
    job = load_job(SCENARIOS / "server-dies.yaml")
    told = story(scenario("agent-lookup", job, ()))
    text = "\n".join(told["processes"][0]["events"])
    assert "server DIES after handling B" in text
    assert "did the request with key" in text and "→ yes, it returned #2" in text
    assert told["verdict"]["asks"] == 0


def test_sweep_list_names_each_scenario_with_the_command_that_explains_it(cli):
    code, out, _ = cli("sweep", "--variant", "after-reply", "--list", "dups")
    assert code == 0
    lines = out.splitlines()
    assert len(lines) == 306  # the table's "with dups" for after-reply
    assert lines[0].split() == ["after-reply:1:6", "temp#1", "then", "accepted#1", "crashlab", "explain",
                                "after-reply:1:6", "--job", "triage"]  # every crash's point, not only the first
    code, out, _ = cli("sweep", "--variant", "markers", "--list", "asks", "--format", "json")
    asks = json.loads(out)
    assert {"id": "markers:9", "first_crash": "accepted#1", "crashes": "accepted#1",
            "command": "crashlab explain markers:9 --job triage"} in asks
    assert all(a["command"] == f"crashlab explain {a['id']} --job triage" for a in asks)


def test_sweep_out_writes_the_results(cli, tmp_path):
    code, _, err = cli("sweep", "--variant", "keys,markers", "--out", str(tmp_path / "r"))
    assert code == 0 and "wrote 1727 scenarios" in err
    lines = (tmp_path / "r" / "scenarios.jsonl").read_text().splitlines()
    assert len(lines) == 34 + 654 + 43 + 996
    first = json.loads(lines[0])
    assert set(first) >= {"id", "variant", "points", "dups", "missing", "asks", "calls_plus"}
    assert [r["variant"] for r in json.loads((tmp_path / "r" / "summary.json").read_text())] == ["keys", "markers"]
    assert (tmp_path / "r" / "summary.csv").read_text().startswith("variant,name,faults,setting,points,once,twice,")
    manifest = json.loads((tmp_path / "r" / "manifest.json").read_text())
    assert set(manifest) == {"crashlab", "job", "job_sha256", "command", "python", "dependencies", "machine"}
    assert manifest["machine"]["cpus"] == os.cpu_count() and manifest["machine"]["system"] == platform.system()
    assert manifest["command"].startswith("crashlab sweep --variant keys,markers")
    assert len(manifest["job_sha256"]) == 64


def test_explain_and_points_at_the_command_line(cli):
    code, out, _ = cli("explain", "after-reply:6")
    assert code == 0 and "A ×2 (DUPLICATED)" in out
    code, out, _ = cli("points", "agent-keyed", "--format", "json")
    assert code == 0 and len(json.loads(out)) == 43
    code, out, err = cli("explain", "after-reply:99")
    assert code == 2 and out == "" and err.strip() == (
        "crashlab: error: after-reply passes crash points 1..34 on job triage: no point 99"
    )
    code, _, err = cli("points", "nope")
    assert code == 2 and "unknown variant 'nope'" in err


HTTP_LOOP = ("--loop", "examples/http_loop.py:keyed", "--effects", "examples/http_loop.yaml")


@pytest.fixture
def idle(tmp_path):
    """tests/idle_loop.py on the command line: its loop and its effects."""
    import yaml

    from .idle_loop import EFFECTS

    (tmp_path / "effects.yaml").write_text(yaml.safe_dump(EFFECTS))
    return "--loop", "tests/idle_loop.py:triage", "--effects", str(tmp_path / "effects.yaml")


def test_each_process_of_your_loop_says_what_it_found_how_it_ended_and_what_it_made(cli):
    code, out, err = cli("explain", "keyed:4", *HTTP_LOOP, "--format", "json")  # dies as B is accepted
    assert code == 0, err
    first, restart = json.loads(out)["processes"]
    assert first["found"] == "no file" and first["held"] == []
    assert first["ended"] == "killed at its point 4 (accepted)"
    run = first["made"][0].partition("under key ")[2].partition(":")[0]  # the loop's key: its run ID and the step
    assert len(run) == 32
    assert first["made"] == [f"issue #1 (A) under key {run}:A", f"issue #2 (B) under key {run}:B"]
    assert re.fullmatch(r"progress\.json \d+ B", restart["found"])  # the run ID and A's and B's numbers
    assert restart["held"] == ["issue #1 (A)", "issue #2 (B)"]
    assert restart["ended"] == "exit status 0: the loop returned"
    assert restart["made"] == [f"comment #1 on #1 (C) under key {run}:C"]  # B's resend replayed, not made
    code, out, _ = cli("explain", "keyed:4", *HTTP_LOOP)
    assert code == 0
    assert "── process 2 (restart) found on disk: progress.json " in out
    assert "      tracker held: issue #1 (A), issue #2 (B)\n" in out
    assert "      ended: exit status 0: the loop returned\n" in out


def test_a_restart_that_finds_its_mark_and_makes_nothing_is_told_to_check_its_resume_condition(cli, idle):
    code, out, err = cli("explain", "triage:1", *idle)  # A filed, then killed; the restart finds `started`
    assert code == 0, err
    assert "missing:       B" in out
    assert ("advice: check the loop's resume condition: it found started 3 B on disk and issue #1 (A) in the "
            "tracker and did nothing (process 2), while B is missing") in out
    code, out, _ = cli("explain", "keyed:4", *HTTP_LOOP)  # a restart that made C
    assert code == 0 and "resume condition" not in out


def test_a_loop_stuck_after_a_timeout_is_told_its_client_does_not_retry(cli, idle):
    code, out, err = cli("explain", "triage+timeout=1-lost", *idle)  # the first request gets a 504
    assert code == 0, err
    assert "stuck:" in out
    assert ("advice: the loop's client does not retry: process 1 got no reply in time to create_issue "
            "'Login fails on Safari', sent it no more and failed") in out
    code, out, _ = cli("explain", "keyed+timeout=1-lost", *HTTP_LOOP)  # its client resends, under the same key
    assert code == 0 and "stuck:" not in out and "does not retry" not in out


def test_a_loop_seen_only_at_the_service_s_points_is_told_to_mark_points_of_its_own(cli, idle):
    code, out, _ = cli("explain", "triage:2", *idle)
    assert code == 0
    assert ("advice: crashlab sees this loop only at its service's points (accepted): mark where it can die "
            "with crashlab.point(label)") in out
    code, out, _ = cli("explain", "keyed:4", *HTTP_LOOP)  # it marks `answered` and `saved`
    assert code == 0 and "advice" not in out


def test_the_scheduler_s_decisions_are_told_only_with_verbose(cli, tmp_path):
    import yaml

    from .threaded_loop import EFFECTS

    (tmp_path / "effects.yaml").write_text(yaml.safe_dump(EFFECTS))
    scheduled = ("explain", "parallel:4", "--loop", "tests/threaded_loop.py:parallel", "--effects",
                 str(tmp_path / "effects.yaml"), "--scheduled")
    code, quiet, err = cli(*scheduled)
    assert code == 0, err
    code, verbose, err = cli(*scheduled, "--verbose")
    assert code == 0, err
    assert "▶ schedule thread" not in quiet and "▶ schedule thread 1 goes on: decision 1" in verbose
    assert [line for line in verbose.splitlines() if "▶ schedule" not in line] == quiet.splitlines()
