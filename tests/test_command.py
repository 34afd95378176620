"""Your agent as it runs: `crashlab sweep --command CMD` sweeps a program crashlab has never seen, in any language.

The agents here (tests/programs/) are programs as people ship them: they import nothing of crashlab's,
mark nothing, read the service's URL from their environment and keep their progress in a file at a
relative path. Each process of a scenario is the program, started afresh in its own run directory and
killed for real where the service commits a request (`accepted`), the only place crashlab sees it.
"""

from __future__ import annotations

import json
import shutil
import sys

import pytest

from .conftest import ROOT

PROGRAMS = ROOT / "tests" / "programs"
EFFECTS = str(ROOT / "examples" / "http_loop.yaml")
PYTHON = f"{sys.executable} {PROGRAMS / 'triage_agent.py'}"
NODE = f"node {PROGRAMS / 'triage_agent.mjs'}"


def rows(cli, *commands: str, depth: int = 1) -> dict[str, dict]:
    code, out, err = cli("sweep", *(a for c in commands for a in ("--command", c)), "--effects", EFFECTS,
                         "--depth", str(depth), "--format", "json")
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


def test_explain_tells_a_programs_scenario_process_by_process(cli):
    code, story, err = cli("explain", "plain:2", "--command", f"plain={PYTHON}", "--effects", EFFECTS)
    assert code == 0, err
    assert "found on disk: progress.json" in story and "ended: exit status 0" in story
    assert "duplicates:    B ×2 (DUPLICATED)" in story
    assert "crashlab sees this program only at its service's points (accepted)" in story  # not "mark it"


@pytest.mark.parametrize(("args", "says"), [
    (["--command", "", "--effects", EFFECTS], "--command names no program"),
    (["--command", "python 'x", "--effects", EFFECTS], "No closing quotation (quote it as a shell would)"),
    (["--command", "no-such-program-here x", "--effects", EFFECTS], "no program 'no-such-program-here' here"),
    (["--command", "true"], "--command needs --effects FILE"),
    (["--command", "true", "--loop", "agent", "--effects", EFFECTS], "--command and --loop agent both name"),
    (["--command", PYTHON, "--command", f"{PYTHON} --keyed", "--effects", EFFECTS], "two --command rows are named"),
    (["--command", "true", "--effects", EFFECTS], "does it call crashlab's service at the URL in CRASHLAB_TRACKER_URL"),
])
def test_a_command_that_cannot_be_swept_is_refused_in_one_line(cli, args, says):
    code, out, err = cli("sweep", *args, "--depth", "1")
    assert (code, out) == (2, "") and err.count("\n") == 1 and says in err


def test_a_program_that_fails_by_itself_fails_the_sweep_in_one_line(cli):
    code, out, err = cli("sweep", "--command", f"{sys.executable} -c 'import sys; sys.exit(3)'", "--effects",
                         EFFECTS, "--depth", "1")
    assert (code, out) == (3, "") and err.strip().endswith("process 1 failed: exited with status 3")


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
