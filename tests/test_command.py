"""Your agent as it runs: `crashlab sweep --command CMD` sweeps a program crashlab has never seen, in any language.

The agents here (tests/programs/) are programs as people ship them: they import nothing of crashlab's,
mark nothing, read the service's URL from their environment and keep their progress in a file at a
relative path. Each process of a scenario is the program, started afresh in its own run directory and
killed for real where the service commits a request (`accepted`), the only place crashlab sees it.
"""

from __future__ import annotations

import contextlib
import json
import shlex
import shutil
import sys

import pytest

from crashlab.durable.fuse import unusable

from .conftest import ROOT

PROGRAMS = ROOT / "tests" / "programs"
EFFECTS = str(ROOT / "examples" / "http_loop.yaml")
PYTHON = f"{sys.executable} {PROGRAMS / 'triage_agent.py'}"
NODE = f"node {PROGRAMS / 'triage_agent.mjs'}"
OPENAI_AGENT = f"{sys.executable} {ROOT / 'examples' / 'agents' / 'openai_loop.py'}"


def rows(cli, *commands: str, depth: int = 1) -> dict[str, dict]:
    """The sweep's rows by name, a row per command; an argument that starts with -- is an option of the sweep."""
    options = [c for c in commands if c.startswith("--")]
    code, out, err = cli("sweep", *(a for c in commands if not c.startswith("--") for a in ("--command", c)),
                         *options, "--effects", EFFECTS, "--depth", str(depth), "--format", "json")
    assert code == 0, err
    return {row["variant"]: row for row in json.loads(out)}


def test_a_plain_program_duplicates_each_effect_its_death_at_the_commit_finds_unsaved_and_a_keyed_one_none(cli):
    """A hand count: the program's only crash points are the service's three commits; a death at the k-th leaves
    effect k made and unsaved, so the restart makes it again; with a key, the service answers the resend."""
    found = rows(cli, f"plain={PYTHON}", f"keyed={PYTHON} --keyed")
    assert (found["plain"]["points"], found["plain"]["with_dups"], found["plain"]["dups"]) == (3, 3, 3)
    assert (found["keyed"]["with_dups"], found["keyed"]["dups"], found["keyed"]["missing"]) == (0, 0, 0)


@pytest.mark.skipif(shutil.which("node") is None, reason="needs Node.js")
def test_the_same_agent_in_javascript_is_swept_the_same_way(cli):
    found = rows(cli, f"plain={NODE}", f"keyed={NODE} --keyed")
    assert (found["plain"]["with_dups"], found["plain"]["dups"]) == (3, 3)
    assert (found["keyed"]["dups"], found["keyed"]["missing"]) == (0, 0)


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("node") is None, reason="needs Node.js")
@pytest.mark.parametrize("program", [PYTHON, NODE], ids=["python", "node"])
def test_at_depth_two_a_plain_program_duplicates_as_counted_by_hand_and_a_keyed_one_never(cli, program):
    """Depth 2: 3 first deaths, and after the k-th a restart with 3 - k + 1 commits left: 3 + 3 + 2 + 1 = 9
    scenarios. A plain restart's death at its j-th commit adds one more copy of the effect it was sending."""
    found = rows(cli, f"plain={program}", f"keyed={program} --keyed", depth=2)
    assert (found["plain"]["scenarios"], found["plain"]["with_dups"]) == (9, 9)
    assert (found["keyed"]["scenarios"], found["keyed"]["dups"], found["keyed"]["missing"]) == (9, 0, 0)


def sweep_from(where, *args: str):
    """`crashlab sweep ARGS` started in the folder `where`, as a user starts it in theirs."""
    import subprocess

    return subprocess.run([sys.executable, "-m", "crashlab", "sweep", *args], cwd=where, capture_output=True,
                          text=True)


def test_a_program_runs_in_its_run_directory_and_never_touches_the_users_files(tmp_path):
    mine = tmp_path / "progress.json"
    mine.write_text("the user's own progress, not the agent's")
    done = sweep_from(tmp_path, "--command", PYTHON, "--effects", EFFECTS, "--depth", "1", "--format", "json")
    assert done.returncode == 0, done.stderr
    assert mine.read_text() == "the user's own progress, not the agent's"  # the agent writes ./progress.json
    assert sorted(p.name for p in tmp_path.iterdir()) == ["progress.json"]
    assert json.loads(done.stdout)[0]["with_dups"] == 3  # and it did run, three times killed


def test_a_relative_script_is_found_where_crashlab_was_started():
    done = sweep_from(PROGRAMS, "--command", "python3 triage_agent.py --keyed", "--effects", EFFECTS, "--depth", "1",
                      "--format", "json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)[0]["variant"] == "triage-agent"  # named for its script


@pytest.mark.slow
def test_points_lists_a_programs_crash_points_with_what_its_run_directory_and_the_service_hold_at_each(cli):
    """The agent's three commits, each with the progress it had saved there (the run's ID, then one result more per
    save) and the service's records; the agent on the official SDK, with --job, asks the model too."""
    code, out, err = cli("points", "--command", f"plain={PYTHON}", "--effects", EFFECTS, "--format", "json")
    assert code == 0, err
    assert [(p["label"], p["checkpoint"], p["tracker"]) for p in json.loads(out)] == [
        ("accepted", "progress.json 55 B", ["issue #1 (A)"]),
        ("accepted", "progress.json 61 B", ["issue #1 (A)", "issue #2 (B)"]),
        ("accepted", "progress.json 69 B", ["issue #1 (A)", "issue #2 (B)", "comment #1 on #1 (C)"])]
    code, out, err = cli("points", "--command", OPENAI_AGENT, "--job", "triage", "--format", "json")
    assert code == 0, err
    labels = [p["label"] for p in json.loads(out)]
    assert labels.count("accepted") == 3 and labels[:2] == ["model-asked", "model-answered"]


@pytest.mark.parametrize(("args", "says"), [
    (["--command", "", "--effects", EFFECTS], "--command names no program"),
    (["--command", "no-such-program-here x", "--effects", EFFECTS], "no program 'no-such-program-here' here"),
    (["--command", PYTHON], "--command needs --effects FILE"),
    (["--command", f"a={PYTHON}", "--command", f"b={PYTHON}", "--effects", EFFECTS],
     "crashlab points lists one program's points: name one as SLUG (a, b)"),
    (["c", "--command", f"a={PYTHON}", "--effects", EFFECTS], "no --command is named 'c' (named: a)"),
    (["per-turn", "--fs-points"], "--fs-points finds the crash points of a program (--command)"),
    (["per-turn", "--effects", EFFECTS], "--effects belongs to your agent as a program: give --command"),
    ([], "crashlab points needs SLUG, a variant (per-turn,"),
])
def test_points_of_a_command_that_cannot_run_are_refused_in_one_line(cli, args, says):
    code, out, err = cli("points", *args)
    assert (code, out) == (2, "") and err.count("\n") == 1 and says in err


def test_points_of_a_program_a_sweep_would_refuse_are_refused_as_the_sweep_refuses_it(cli):
    code, out, err = cli("points", "--command", "true", "--effects", EFFECTS)
    assert (code, out) == (2, "") and err.count("\n") == 1
    assert "does it call crashlab's service at the URL in CRASHLAB_TRACKER_URL" in err


@pytest.mark.slow
def test_sweep_list_names_a_programs_scenarios_each_with_the_explain_that_replays_it(cli):
    code, out, err = cli("sweep", "--command", f"plain={PYTHON}", "--effects", EFFECTS, "--depth", "1", "--list",
                         "dups")
    assert code == 0, err
    listed = out.splitlines()
    assert [line.split()[:2] for line in listed] == [["plain:1", "accepted#1"], ["plain:2", "accepted#2"],
                                                       ["plain:3", "accepted#3"]]
    replay = shlex.split(listed[1].split(None, 2)[2])
    assert replay[:3] == ["crashlab", "explain", "plain:2"]
    code, story, err = cli(*replay[1:])
    assert code == 0, err
    assert "duplicates:    B ×2 (DUPLICATED)" in story


def test_explain_tells_a_programs_scenario_process_by_process(cli):
    code, story, err = cli("explain", "plain:2", "--command", f"plain={PYTHON}", "--effects", EFFECTS)
    assert code == 0, err
    assert "found on disk: progress.json" in story and "ended: exit status 0" in story
    assert "duplicates:    B ×2 (DUPLICATED)" in story
    assert "crashlab sees this program only at its service's points (accepted): sweep it with --fs-points" in story


@pytest.mark.parametrize(("args", "says"), [
    (["--command", "", "--effects", EFFECTS], "--command names no program"),
    (["--command", "python 'x", "--effects", EFFECTS], "No closing quotation (quote it as a shell would)"),
    (["--command", "no-such-program-here x", "--effects", EFFECTS], "no program 'no-such-program-here' here"),
    (["--command", "true"], "--command needs --effects FILE"),
    (["--command", "true", "--loop", "agent", "--effects", EFFECTS], "--command and --loop agent both name"),
    (["--command", PYTHON, "--command", f"{PYTHON} --keyed", "--effects", EFFECTS], "two --command rows are named"),
    (["--command", "true", "--effects", EFFECTS], "does it call crashlab's service at the URL in CRASHLAB_TRACKER_URL"),
    (["--loop", "examples/http_loop.py:plain", "--effects", EFFECTS, "--fs-points"],
     "--fs-points finds the crash points of a program (--command)"),
])
def test_a_command_that_cannot_be_swept_is_refused_in_one_line(cli, args, says):
    code, out, err = cli("sweep", *args, "--depth", "1")
    assert (code, out) == (2, "") and err.count("\n") == 1 and says in err


def test_a_program_that_fails_by_itself_fails_the_sweep_in_one_line(cli):
    code, out, err = cli("sweep", "--command", f"{sys.executable} -c 'import sys; sys.exit(3)'", "--effects",
                         EFFECTS, "--depth", "1")
    assert (code, out) == (3, "") and err.strip().endswith("process 1 failed: exited with status 3")


@pytest.mark.slow
def test_a_program_that_cannot_stop_at_a_crash_point_fails_the_sweep_in_one_line_and_never_hangs(tmp_path):
    """Sharing stops a program at each crash point to copy what a death there would leave. A program with a thread
    waiting for the child it vfork'ed to exec cannot stop: the harness waited for the stop for ever. It waits up to
    the time limit, and the sweep fails in one line."""
    effects = tmp_path / "effects.yaml"
    effects.write_text("A: {issue: Login fails on Safari}\nB: {issue: Export times out}\n")
    code, out, err = within(60, "sweep", "--command", f"{sys.executable} {PROGRAMS / 'unstoppable_agent.py'}",
                            "--effects", str(effects), "--state-in-run-dir", "--depth", "1", "--time-limit", "1")
    assert (code, out) == (3, "") and err.count("\n") == 1, err
    assert err.strip().endswith("process 1 failed: hung: asked to stop, it ran on past its time limit of 1 s "
                                "(--time-limit), and was killed")


# With --job, crashlab also plays the job's model, over the wire formats the official SDKs speak (the agents of
# examples/agents/, on the official SDKs, are swept so in tests/test_examples_agents.py).


def test_a_program_that_never_asks_the_jobs_model_is_refused_in_one_line(cli):
    code, out, err = cli("sweep", "--command", PYTHON, "--job", "triage", "--depth", "1")
    assert (code, out) == (2, "") and err.count("\n") == 1
    assert "never asked crashlab's model, which plays job triage: point its client at OPENAI_BASE_URL" in err


def test_a_program_whose_conversation_leaves_the_script_is_refused_in_one_line_that_shows_where(cli):
    code, out, err = cli("sweep", "--command", f"{sys.executable} {PROGRAMS / 'off_script.py'}", "--job", "triage",
                         "--depth", "1")
    assert (code, out) == (2, "") and err.count("\n") == 1
    assert err.strip().endswith("the program's conversation left its job's script: reply 1 holds 1 tool call(s) "
                                "(create_issue) where the job's turn 1 has 2 (create_issue A, create_issue B)")


@pytest.mark.slow
def test_a_key_made_of_the_models_tool_call_id_duplicates_when_the_served_model_drifts_and_never_when_it_does_not(cli):
    """The Agents SDK's #4254: a provider asked again names its calls anew. openai_loop.py --keyed keys each request
    by the run's ID and the tool-call ID, and with --whole-turns saves a reply only with its results, as the SDK's
    session does: a death at a commit makes the restart ask for the turn again, and under drifting IDs its keys
    are new, so the service makes the effect again; under stable ones the same key is answered."""
    found = {}
    for fault in ("crash", "drifting-model"):
        code, out, err = cli("sweep", "--command", f"keyed={OPENAI_AGENT} --keyed --whole-turns", "--job", "triage",
                             "--depth", "1",
                             "--fault", fault, "--format", "json")
        assert code == 0, err
        (found[fault],) = json.loads(out)
    assert (found["crash"]["dups"], found["crash"]["missing"]) == (0, 0)
    assert found["crash"]["calls_plus"] > 0, "the restarts did ask again: the stable IDs kept their keys"
    assert found["drifting-model"]["with_dups"] > 0 and found["drifting-model"]["missing"] == 0
    assert found["drifting-model"]["points"] == found["crash"]["points"]


@pytest.mark.parametrize(("args", "says"), [
    (["--command", PYTHON, "--effects", EFFECTS], "--fault drifting-model drifts the model crashlab's service plays "
                                                 "to a program (--command with --job): triage-agent asks it nothing"),
    (["--command", OPENAI_AGENT, "--job", "triage", "--drift", "order"], "--drift order has no form yet where "
                                                                          "crashlab's service plays the model"),
])
def test_a_drifting_model_where_no_model_can_drift_is_refused_in_one_line(cli, args, says):
    code, out, err = cli("sweep", *args, "--fault", "drifting-model", "--depth", "1")
    assert (code, out) == (2, "") and err.count("\n") == 1 and says in err


# With --fs-points, the file-system layer under the run directory finds the program's own steps: each file operation
# that changes what a death leaves is a crash point, named by what it is and its path.

SQLITE_AGENT = f"{sys.executable} {PROGRAMS / 'sqlite_agent.py'}"
NO_FILES_AGENT = f"{sys.executable} {PROGRAMS / 'no_files_agent.py'}"
needs_fuse = pytest.mark.skipif(bool(unusable()), reason=f"FUSE is not usable here: {unusable()}")


def every_point(cli, command: str) -> list[str]:
    """The labels of the crash points of `command`'s whole run, as the restart after a death at its first point
    passes them (which `explain` tells, one a line)."""
    code, out, err = cli("explain", "run:1", "--command", f"run={command}", "--effects", EFFECTS, "--fs-points",
                         "--format", "json")
    assert code == 0, err
    restart = json.loads(out)["processes"][-1]
    assert restart["ended"].startswith("exit status 0")
    return [line.split()[1] for line in restart["events"] if line.split()[0].isdigit()]


@pytest.mark.slow
@needs_fuse
def test_a_programs_file_operations_are_crash_points_named_by_what_they_are_and_their_path(cli):
    """triage_agent.py saves progress.json as people are told to: written to a temporary file, synced, closed, renamed
    over, its directory synced; sqlite_agent.py commits to SQLite in WAL mode, a sync of its WAL per commit."""
    triage = every_point(cli, PYTHON)
    save = ["fsync:progress.tmp", "close:progress.tmp", "rename:progress.tmp->progress.json", "fsync:."]
    assert triage == [*save, "accepted", *save, "accepted", *save, "accepted", *save]
    if shutil.which("node") is not None:  # the JavaScript twin, its saves made with node's fs as Python makes them
        assert every_point(cli, NODE) == triage
    sqlite = every_point(cli, SQLITE_AGENT)
    assert sqlite.count("accepted") == 3
    assert sqlite[sqlite.index("accepted") + 1] == "fdatasync:progress.sqlite-wal"  # the step's commit


@pytest.mark.slow
@needs_fuse
def test_a_plain_program_duplicates_where_it_dies_between_its_request_and_the_rename_that_saves_its_result(cli):
    """A hand count: each effect is made at `accepted` and saved as of its rename, so a death at `accepted` or at the
    three points after it (fsync:progress.tmp, close:progress.tmp, the rename itself) makes it again: 4 of each
    effect's 5 points, 12 of 19. A death at the directory's sync, after the rename, leaves it saved."""
    found = rows(cli, f"plain={PYTHON}", f"keyed={PYTHON} --keyed", "--fs-points")
    assert (found["plain"]["points"], found["plain"]["with_dups"], found["plain"]["dups"]) == (19, 12, 12)
    assert (found["keyed"]["points"], found["keyed"]["dups"], found["keyed"]["missing"]) == (19, 0, 0)
    code, story, err = cli("explain", "plain:8", "--command", f"plain={PYTHON}", "--effects", EFFECTS, "--fs-points")
    assert code == 0, err
    assert "crashes at its point 8 (rename:progress.tmp->progress.json" in story
    assert "found on disk: progress.json 55 B, progress.tmp" in story  # the result written, never renamed in
    assert "duplicates:    A ×2 (DUPLICATED)" in story


@pytest.mark.slow
@needs_fuse
def test_a_program_swept_at_its_file_operations_shares_restarts_as_it_re_executes_them(cli):
    """Restarted from copies of its run directory, taken from under the layer while the process stands in the
    operation the layer holds, the sweep counts what re-executing every scenario counts."""
    command = ["--command", f"plain={PYTHON}", "--effects", EFFECTS, "--fs-points", "--depth", "1", "--format",
               "json"]
    code, shared, err = cli("sweep", *command, "--state-in-run-dir")
    assert code == 0, err
    again, replayed, err = cli("sweep", *command, "--no-share")
    assert again == 0, err
    ours = json.loads(shared)
    assert ours == json.loads(replayed)  # every column, the states' too
    assert ours[0]["with_dups"] == 12 and ours[0]["distinct"] < ours[0]["scenarios"]


@pytest.mark.slow
@needs_fuse
def test_a_program_that_writes_no_file_has_no_file_system_points(cli):
    """The same sweep, the same layer: the agent that keeps progress.json has its saves' points, the one that keeps
    nothing only the service's three commits (keyed by step, it makes each effect once)."""
    found = rows(cli, f"none={NO_FILES_AGENT}", f"saves={PYTHON}", "--fs-points")
    assert (found["none"]["points"], found["none"]["dups"], found["none"]["missing"]) == (3, 0, 0)
    assert found["saves"]["points"] == 19
    code, story, err = cli("explain", "none:1", "--command", f"none={NO_FILES_AGENT}", "--effects", EFFECTS,
                           "--fs-points")
    assert code == 0, err
    assert "it wrote, synced, renamed and unlinked no file in its run directory" in story


@pytest.mark.slow
@needs_fuse
def test_points_of_a_programs_file_operations_show_its_run_directory_as_each_finds_it(cli):
    """At the second save's rename the result is in progress.tmp alone; at the directory's sync after it, in
    progress.json: what a death at each leaves, copied from under the layer while it holds the operation."""
    code, out, err = cli("points", "--command", f"plain={PYTHON}", "--effects", EFFECTS, "--fs-points", "--format",
                         "json")
    assert code == 0, err
    on_disk = {f"{p['label']}#{p['occurrence']}": p["checkpoint"] for p in json.loads(out)}
    assert len(on_disk) == 19
    assert on_disk["rename:progress.tmp->progress.json#2"] == "progress.json 55 B, progress.tmp 61 B"
    assert on_disk["fsync:.#2"] == "progress.json 61 B"


def within(seconds: float, *args: str, cwd=ROOT) -> tuple[int, str, str]:
    """`crashlab ARGS` in a process of its own, and if it runs past `seconds`, a failure that says it hung. A sweep
    deadlocked on the file-system layer stands in the kernel, in a request the layer never answers, where no signal
    reaches it: what frees it is the death of the layer's process, a child of its own, so its children are killed
    first, by their IDs, and then it (the rest die with it, and the layer's mount with the layer)."""
    import os
    import signal
    import subprocess
    from pathlib import Path

    sweep = subprocess.Popen([sys.executable, "-m", "crashlab", *args], cwd=cwd, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
    try:
        out, err = sweep.communicate(timeout=seconds)
    except subprocess.TimeoutExpired:
        children = [int(pid) for task in Path(f"/proc/{sweep.pid}/task").glob("*")
                    for pid in (task / "children").read_text().split()]
        for pid in [*children, sweep.pid]:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        sweep.communicate()
        pytest.fail(f"crashlab {' '.join(args)} hung: still running after {seconds:g} s")
    return sweep.returncode, out, err


@pytest.mark.slow
@needs_fuse
def test_a_power_cut_at_a_file_operation_loses_what_no_sync_made_durable_and_nothing_a_sync_did(tmp_path):
    """At a file operation the layer holds the program and waits for the harness's word, and a power cut there asks the
    layer how many states a cut leaves: asked through the mount, both waited on the other (a sweep hung so). Asked on
    the layer's own line, the sweep ends, and counts by hand. Each effect's points: at `accepted` everything before
    it was synced (its save's `fsync:.`), so a cut there leaves one state, the crash's, and the effect is made again;
    a cut anywhere in its save before the directory's sync takes back the rename that saves it, so every state of
    those points duplicates, the crash's at `fsync:.` alone not (the rename is made). The first save: 10 states, none
    duplicates; each effect 1 + 3 + 2 + 2 + 3 = 11 states, 10 duplicate: 43 scenarios, 30 with a duplicate."""
    code, out, err = within(300, "sweep", "--command", f"plain={PYTHON}", "--effects", EFFECTS, "--fs-points",
                            "--fault", "power-cut", "--depth", "1", "--format", "json", "--out", str(tmp_path))
    assert code == 0, err
    (row,) = json.loads(out)
    assert (row["points"], row["scenarios"], row["with_dups"], row["missing"]) == (19, 43, 30, 0)
    dups: dict[str, list[int]] = {}
    for line in (tmp_path / "scenarios.jsonl").read_text().splitlines():
        scenario = json.loads(line)
        dups.setdefault(scenario["points"][0], []).append(scenario["dups"])
    assert dups["fsync:.#1"] == [0, 0, 0]  # the first save: nothing made yet
    assert [dups[point] for point in ("accepted#1", "fsync:progress.tmp#2", "close:progress.tmp#2",
                                      "rename:progress.tmp->progress.json#2", "fsync:.#2")] \
        == [[1], [1, 1, 1], [1, 1], [1, 1], [0, 1, 1]]


@pytest.mark.slow
@needs_fuse
@pytest.mark.parametrize("fault", ["crash", "power-cut"])
def test_a_program_whose_threads_race_at_its_file_operations_is_refused_and_never_hangs(fault):
    """threads_agent.py files two issues on two threads, each saving its own file: which goes first changes from run to
    run, so no table can count it. A thread can stand in an operation the layer holds as its process dies for the
    other's sake, which kept the process from ending (the harness waited on it, it on the layer, the layer on the
    harness). The sweep ends, and says why it cannot count the program."""
    code, _, err = within(300, "sweep", "--command", f"{sys.executable} {PROGRAMS / 'threads_agent.py'}",
                          "--effects", EFFECTS, "--fs-points", "--fault", fault, "--depth", "1", "--format", "json")
    assert code == 3 and ("the loop is not deterministic" in err or "flaky scenarios" in err), err


def test_fs_points_where_fuse_is_not_usable_are_refused_in_one_line(cli, monkeypatch):
    monkeypatch.setattr("crashlab.durable.fuse.unusable", lambda: "fusermount3 is not installed")
    code, out, err = cli("sweep", "--command", PYTHON, "--effects", EFFECTS, "--fs-points", "--depth", "1")
    assert (code, out) == (2, "") and err.count("\n") == 1
    assert "--fs-points runs the program's run directory on a FUSE layer, and here fusermount3 is not installed" in err
