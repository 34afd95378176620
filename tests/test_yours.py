"""Your loop, your service: a loop whose tools make plain HTTP calls, swept from the command line.

The loops here import nothing of crashlab's: they find the service in ``CRASHLAB_TRACKER_URL`` and
their folder in ``CRASHLAB_RUN_DIR``, and the harness recognises their effects by what they are.
"""

import json
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from crashlab.api import sweep
from crashlab.loops.yours import load

from .helpers import same_sweep

EFFECTS = "examples/http_loop.yaml"
README = Path(__file__).resolve().parent.parent / "README.md"
README_ROW = re.compile(r"^\| `http_loop\.py:(\w+)`[^|]*\| (\d+) \| (\d+) \| (\d+) \| (\d+) \| (\d+) \|$", re.M)

#: A loop with no crashlab import at all, and no crash point of its own: the service's `accepted` is
#: the only place it can die. It files what `STEPS` says, saving its progress after each.
LOOP = '''
import json, os, urllib.request
from pathlib import Path

STEPS = {steps}

def post(path, payload, key=None):
    headers = {{"Content-Type": "application/json"}}
    if key:
        headers["Idempotency-Key"] = key
    url = os.environ["CRASHLAB_TRACKER_URL"] + path
    with urllib.request.urlopen(urllib.request.Request(url, json.dumps(payload).encode(), headers)) as answer:
        return json.load(answer)["number"]

def main(keyed=False):
    saved = Path(os.environ["CRASHLAB_RUN_DIR"]) / "done.json"
    done = json.loads(saved.read_text()) if saved.exists() else {{}}
    for step, title in STEPS:
        if step not in done:
            done[step] = post("/issues", {{"title": title}}, f"run-1:{{step}}" if keyed else None)
            saved.write_text(json.dumps(done))

def keyed():
    main(keyed=True)
'''


def loop_file(tmp_path: Path, steps: list[tuple[str, str]], name: str = "loop.py") -> str:
    path = tmp_path / name
    path.write_text(LOOP.format(steps=repr(steps)))
    return str(path)


def effects_file(tmp_path: Path, text: str) -> str:
    path = tmp_path / "effects.yaml"
    path.write_text(textwrap.dedent(text))
    return str(path)


def test_the_http_loop_duplicates_exactly_between_the_services_commit_and_its_own_save(cli):
    code, out, _ = cli("sweep", "--loop", "examples/http_loop.py:plain", "--effects", EFFECTS, "--depth", "1",
                       "--list", "dups", "--format", "json")
    assert code == 0
    dying = [s["first_crash"] for s in json.loads(out)]
    assert dying == ["accepted#1", "answered#1", "accepted#2", "answered#2", "accepted#3", "answered#3"]


@pytest.mark.slow
def test_the_http_loop_with_a_key_of_run_id_and_step_neither_duplicates_nor_loses_at_depth_2(cli):
    code, out, err = cli("sweep", "--loop", "examples/http_loop.py:keyed", "--effects", EFFECTS, "--format", "json")
    (row,) = json.loads(out)
    assert code == 0 and row["scenarios"] == 54
    assert (row["dups"], row["missing"], row["flaky"], row["orphans"]) == (0, 0, 0, 0)
    assert err == ""  # no failure window to print


@pytest.mark.slow
def test_a_keyless_service_ignores_the_key_so_the_keyed_loop_duplicates(cli):
    code, out, _ = cli("sweep", "--loop", "examples/http_loop.py:keyed", "--effects", EFFECTS, "--tracker",
                       "keyless", "--depth", "1", "--format", "json")
    (row,) = json.loads(out)
    assert code == 0 and row["dups"] == 6


@pytest.mark.slow
def test_several_entry_points_of_one_file_are_rows_of_one_table(cli):
    code, out, _ = cli("sweep", "--loop", "examples/http_loop.py:plain,keyed", "--effects", EFFECTS, "--depth", "1",
                       "--format", "json")
    assert code == 0 and [(r["variant"], r["dups"]) for r in json.loads(out)] == [("plain", 6), ("keyed", 0)]


def test_failures_are_told_as_windows_each_with_the_command_that_replays_it(cli):
    code, _, err = cli("sweep", "--loop", "examples/http_loop.py:plain", "--effects", EFFECTS, "--depth", "1")
    lines = err.splitlines()
    assert code == 0 and len(lines) == 3
    assert lines[0] == ("A made twice when the process dies anywhere from `accepted#1` to `answered#1` "
                        "(2 scenarios, plain:1 to plain:2); replay: crashlab explain plain:1 --loop "
                        "examples/http_loop.py:plain --effects examples/http_loop.yaml")
    code, story, _ = cli(*lines[0].split("replay: crashlab ")[1].split())
    assert code == 0 and "duplicates:    A ×2 (DUPLICATED)" in story


@pytest.mark.slow
def test_a_loop_with_no_crashlab_import_and_no_point_of_its_own_dies_where_the_service_commits(cli, tmp_path):
    loop = loop_file(tmp_path, [("A", "One"), ("B", "Two")])
    effects = effects_file(tmp_path, "A: {issue: One}\nB: {issue: Two}\n")
    code, out, _ = cli("sweep", "--loop", f"{loop}:main", "--effects", effects, "--format", "json")
    (row,) = json.loads(out)
    assert code == 0 and (row["points"], row["scenarios"]) == (2, 5)
    # main:1 files A twice, main:1:1 three times, main:1:2 A and B twice each; main:2 files B twice, main:2:1 thrice
    assert (row["dups"], row["missing"]) == (1 + 2 + 2 + 1 + 2, 0)
    code, out, _ = cli("sweep", "--loop", f"{loop}:keyed", "--effects", effects, "--format", "json")
    assert code == 0 and json.loads(out)[0]["dups"] == 0


@pytest.mark.parametrize("steps, effects, says", [
    ([], "A: {issue: One}\n", "main: its uninterrupted run must make each intended effect (A) exactly once, and it "
                              "made A not at all"),
    ([("A", "Onw")], "A: {issue: One}\n", "made A not at all; records for issue 'Onw', which is no intended effect"),
    ([("A", "One"), ("B", "One")], "A: {issue: One}\n", "made A 2 times"),
    ([("A", "One"), ("B", "Two")], "A: {issue: One}\n", "records for issue 'Two', which is no intended effect"),
])
def test_an_uninterrupted_run_that_does_not_make_each_effect_once_is_refused_in_one_line(cli, tmp_path, steps,
                                                                                          effects, says):
    loop = loop_file(tmp_path, steps)
    code, out, err = cli("sweep", "--loop", f"{loop}:main", "--effects", effects_file(tmp_path, effects))
    assert (code, out) == (2, "") and says in err and err.count("\n") == 1


def test_an_empty_loop_is_refused_with_its_word_that_it_keeps_its_state_in_its_run_directory(cli, tmp_path):
    """The copy check cannot pass an empty loop: the loop is refused before any copy is taken."""
    loop = loop_file(tmp_path, [])
    code, out, err = cli("sweep", "--loop", f"{loop}:main", "--effects", effects_file(tmp_path, "A: {issue: One}\n"),
                         "--state-in-run-dir")
    assert (code, out) == (2, "") and "made A not at all" in err and err.count("\n") == 1


@pytest.mark.parametrize("args, says", [
    (["--loop", "examples/http_loop.py"], "unknown loop 'examples/http_loop.py'"),
    (["--loop", "examples/nope.py:main", "--effects", EFFECTS], "no file 'examples/nope.py'"),
    (["--loop", "examples/http_loop.py:nope", "--effects", EFFECTS], "has no function 'nope' (its functions:"),
    (["--loop", "examples/http_loop.py:STEPS", "--effects", EFFECTS], "has no function 'STEPS'"),
    (["--loop", "examples/http_loop.py:plain,plain", "--effects", EFFECTS], "plain is named twice"),
    (["--loop", "examples/http_loop.py:plain,", "--effects", EFFECTS], "(ENTRY,ENTRY... for several)"),
    (["--loop", "examples/http_loop.py:plain"], "needs --effects FILE"),
    (["--loop", "examples/http_loop.py:plain", "--effects", "nope.yaml"], "--effects 'nope.yaml':"),
    (["--loop", "examples/http_loop.py:plain", "--effects", "README.md"], "not YAML at line"),
    (["--loop", "examples/http_loop.py:plain", "--effects", "scenarios/triage.yaml"], "name: say what it is"),
    (["--loop", "examples/http_loop.py:plain", "--effects", EFFECTS, "--job", "triage"], "drop --job"),
    (["--loop", "examples/http_loop.py:plain", "--effects", EFFECTS, "--variant", "plain"], "drop --variant"),
    (["--loop", "examples/http_loop.py:plain", "--effects", EFFECTS, "--tracker", "all"], "is none of keyed"),
    (["--effects", EFFECTS], "--effects belongs to a loop of yours"),
    (["--loop", "no_such_module:main", "--effects", EFFECTS], "importing no_such_module failed"),
    (["--state-in-run-dir"], "--state-in-run-dir is the word of a loop of yours"),
    (["--loop", "dbos", "--kill", "--state-in-run-dir"], "--state-in-run-dir is the word of a loop of yours"),
])
def test_a_loop_of_yours_given_wrong_is_refused_in_one_line(cli, args, says):
    code, out, err = cli("sweep", *args)
    assert (code, out) == (2, "") and says in err and err.count("\n") == 1, err


def test_a_loop_that_keeps_all_in_its_run_directory_restarts_from_copies_and_counts_as_re_executed(cli):
    """`--state-in-run-dir`: each restart starts from a copy of what its death left, each distinct state once, and
    every count, the states' too, is what re-executing every scenario gives."""
    loops = ["--loop", "examples/http_loop.py:plain,keyed,ladder", "--effects", EFFECTS, "--state-in-run-dir",
             "--depth", "1", "--format", "json"]
    code, shared, _ = cli("sweep", *loops)
    again, replayed, _ = cli("sweep", *loops, "--no-share")
    assert code == again == 0
    ours = json.loads(shared)
    assert ours == json.loads(replayed)
    assert all(row["distinct"] < row["scenarios"] for row in ours)  # equal states restarted once
    assert [row["dups"] > 0 for row in ours] == [True, False, False]


@pytest.mark.slow
def test_shared_and_re_executed_the_http_loop_agrees_at_depth_2_in_every_column_every_run(cli, tmp_path):
    """Scenario by scenario and in every column, `distinct` and `windows` too: the loop stamps a run ID of its own
    drawing in its progress file (and, keyed, in the service's keys), so no two re-executed runs leave the same
    bytes, and the shared sweep's copies meet each state once; each tells a state by what follows it. A shared
    sweep on two workers, whose memos meet different states each run, prints the same table again."""
    loops = ["--loop", "examples/http_loop.py:plain,keyed,ladder", "--effects", EFFECTS, "--state-in-run-dir",
             "--depth", "2"]
    outs = {}
    for name, more in [("shared", ()), ("again", ("--workers", "2")), ("re-executed", ("--no-share",))]:
        code, _, _ = cli("sweep", *loops, *more, "--out", str(tmp_path / name))
        assert code == 0
        outs[name] = {f: (tmp_path / name / f).read_text() for f in ("scenarios.jsonl", "summary.json")}
    rows = json.loads(outs["shared"]["summary.json"])
    assert [row["windows"] > 0 for row in rows] == [True, False, False]
    assert all(0 < row["distinct"] < row["scenarios"] for row in rows)
    assert outs["shared"] == outs["again"] == outs["re-executed"]


@pytest.mark.parametrize("workers", ["1", "2"])
def test_a_loop_that_keeps_its_state_outside_its_run_directory_is_refused_not_trusted(cli, tmp_path, monkeypatch,
                                                                                      workers):
    """A loop whose progress is in a file named after its run directory, elsewhere: a restart from a copy of the
    directory finds none, where the restart after the death does. Re-executed, it sweeps as it is. The copies are
    checked as the branches grow, on the sweep's workers, and a refusal there is the same one line."""
    monkeypatch.setenv("OUTSIDE_LOOP_STATE", str(tmp_path))
    effects = effects_file(tmp_path, """\
        A: {issue: Login fails on Safari}
        B: {issue: Export times out}
    """)
    loop = ["--loop", "tests/outside_loop.py:triage", "--effects", effects, "--workers", workers]
    code, out, err = cli("sweep", *loop, "--state-in-run-dir")
    assert (code, out) == (2, "") and err.count("\n") == 1, err
    assert "triage: process 1 wrote outside its run directory: PermissionError: [Errno 13] Permission denied" in err
    monkeypatch.setattr("crashlab.runners.confined.version", lambda: 0)  # a kernel without Landlock: the copies tell
    code, out, err = cli("sweep", *loop, "--state-in-run-dir")
    assert (code, out) == (2, "") and err.count("\n") == 1, err
    assert "triage keeps state outside its run directory: restarted after a death at its point 2" in err
    assert "sweep it without --state-in-run-dir" in err
    code, out, _ = cli("sweep", *loop, "--format", "json")
    assert code == 0 and json.loads(out)[0]["with_dups"] == 5


@pytest.mark.parametrize("ending, says", [
    ("sys.exit(main())", "it called sys.exit(None) as it was imported"),
    ("sys.exit(0)", "it called sys.exit(0) as it was imported"),
    ("sys.exit('usage: loop.py')", "it called sys.exit('usage: loop.py') as it was imported"),
    ("raise GeneratorExit('odd')", "GeneratorExit: odd"),
])
def test_a_loop_file_that_exits_as_it_is_imported_is_refused_not_passed(cli, tmp_path, ending, says):
    """`sys.exit(main())` at a script's end ended crashlab with exit 0 and no output: a CI step passed."""
    (tmp_path / "script.py").write_text(f"import sys\n\ndef main():\n    pass\n\n{ending}\n")
    code, out, err = cli("sweep", "--loop", f"{tmp_path}/script.py:main", "--effects", EFFECTS)
    assert (code, out) == (2, "") and err.count("\n") == 1, err
    assert f"script.py failed: {says}" in err


def test_a_loop_file_that_is_not_python_is_refused_in_one_line(cli, tmp_path):
    """It was an AssertionError's traceback."""
    (tmp_path / "loop.txt").write_text("def main():\n    pass\n")
    code, out, err = cli("sweep", "--loop", f"{tmp_path}/loop.txt:main", "--effects", EFFECTS)
    assert (code, out) == (2, "") and err.count("\n") == 1, err
    assert "' is not a Python file: a loop of yours is FILE.py:ENTRY or MODULE:ENTRY" in err


def test_each_process_runs_in_its_run_directory_and_the_user_s_file_of_the_same_name_survives(tmp_path):
    """A loop that keeps progress.json at a relative path wrote it into the user's working directory: it overwrote
    the user's own file, and each scenario resumed from the one before's."""
    loop = (tmp_path / "loop.py")
    loop.write_text(LOOP.replace('Path(os.environ["CRASHLAB_RUN_DIR"]) / "done.json"', 'Path("progress.json")')
                    .format(steps=repr([("A", "One"), ("B", "Two")])))
    (tmp_path / "effects.yaml").write_text("A: {issue: One}\nB: {issue: Two}\n")
    (tmp_path / "progress.json").write_text("the user's own")
    done = subprocess.run([sys.executable, "-m", "crashlab", "sweep", "--loop", "loop.py:keyed", "--effects",
                           "effects.yaml", "--depth", "1", "--format", "json"], cwd=tmp_path, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    (row,) = json.loads(done.stdout)
    assert row["scenarios"] > 0 and (row["dups"], row["missing"]) == (0, 0)
    assert (tmp_path / "progress.json").read_text() == "the user's own"


#: LOOP, keyed, that prints as it goes: 20 MB on stdout first, a line on stderr, and a line per issue it files.
PRINTS = """
import sys
from loop import keyed


def main():
    sys.stdout.write(("y" * 1023 + "\\n") * 20 * 1024)
    print("warning: \\x1b[31mno config\\x1b[0m, using defaults", file=sys.stderr)
    keyed()
    print("filed A and B")
"""


@pytest.mark.parametrize("fmt", ["json", "csv", "table"])
def test_what_a_loop_prints_is_kept_apart_from_the_table_and_told_by_explain(tmp_path, fmt):
    """A loop's print() went into crashlab's own stdout: `--format json` was no JSON, and a loop that printed
    20 MB a process wrote it all there."""
    loop_file(tmp_path, [("A", "One"), ("B", "Two")])
    (tmp_path / "printing.py").write_text(PRINTS)
    (tmp_path / "effects.yaml").write_text("A: {issue: One}\nB: {issue: Two}\n")
    loop = ["--loop", "printing.py:main", "--effects", "effects.yaml"]
    done = subprocess.run([sys.executable, "-m", "crashlab", "sweep", *loop, "--depth", "1", "--format", fmt],
                          cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert len(done.stdout) < 2000 and "yyy" not in done.stdout + done.stderr and "no config" not in done.stderr
    if fmt == "json":
        assert json.loads(done.stdout)[0]["variant"] == "main"
    elif fmt == "csv":
        assert done.stdout.splitlines()[1].startswith("main,")
    else:
        assert "| main " in done.stdout
    told = subprocess.run([sys.executable, "-m", "crashlab", "explain", "main:1", *loop], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120)
    assert told.returncode == 0, told.stderr[-2000:]
    assert told.stdout.count("printed on stdout: 20,971,520 bytes; its last 10 lines:") == 1  # the first process's
    assert "printed on stdout: 20,971,534 bytes; its last 10 lines:" in told.stdout  # the restart filed, and said so
    assert "        | filed A and B\n" in told.stdout and "        | " + "y" * 199 + "…\n" in told.stdout
    assert "printed on stderr: 44 bytes, its last line:\n        | warning: \\x1b[31mno config\\x1b[0m, using " \
           "defaults\n" in told.stdout
    assert len(told.stdout) < 20_000


def test_a_loop_file_that_fails_to_import_is_named_with_its_error(cli, tmp_path):
    (tmp_path / "broken.py").write_text("import json\nraise RuntimeError('no config')\n")
    code, _, err = cli("sweep", "--loop", f"{tmp_path}/broken.py:main", "--effects", EFFECTS)
    assert code == 2 and "broken.py failed: RuntimeError: no config" in err


def test_a_loop_file_imports_its_siblings(tmp_path):
    (tmp_path / "sibling_steps.py").write_text("STEPS = [('A', 'One')]\n")
    (tmp_path / "uses_sibling.py").write_text("from sibling_steps import STEPS\ndef main():\n    return STEPS\n")
    job, [(slug, entry)] = load(f"{tmp_path}/uses_sibling.py:main")
    assert (job, slug, entry()) == ("uses-sibling", "main", [("A", "One")])


@pytest.mark.slow
def test_the_python_api_sweeps_a_served_loop_by_its_effects_as_the_cli_does(tmp_path):
    from examples import http_loop

    swept = sweep(http_loop.keyed, {"A": {"issue": "Login fails on Safari"}, "B": {"issue": "Export times out"},
                                    "C": {"comment": "A"}}, name="keyed", depth=1)
    assert swept.ok and swept.row().scenarios == 9
    plain = sweep(http_loop.plain, {"A": {"issue": "Login fails on Safari"}, "B": {"issue": "Export times out"},
                                    "C": {"comment": "A"}}, name="plain", depth=1)
    assert not plain.ok and plain.dups == 6 and len(plain.failures()) == 3


@pytest.mark.slow
@pytest.mark.parametrize("entry", ["plain", "keyed", "ladder"])
def test_the_api_sweep_from_copies_agrees_scenario_by_scenario_with_re_executing_at_depth_2(entry):
    from examples import http_loop

    effects = {"A": {"issue": "Login fails on Safari"}, "B": {"issue": "Export times out"}, "C": {"comment": "A"}}
    shared = sweep(getattr(http_loop, entry), effects, name=entry, depth=2, state_in_run_dir=True)
    same_sweep(shared, sweep(getattr(http_loop, entry), effects, name=entry, depth=2))
    assert shared.row().distinct < shared.row().scenarios


@pytest.mark.slow
def test_the_mcp_loop_gives_the_http_loops_table_which_the_readme_shows(cli):
    tables = []
    for loop in ("examples/http_loop.py", "examples/mcp_loop.py"):
        for entry in ("plain", "keyed"):
            code, out, _ = cli("sweep", "--loop", f"{loop}:{entry}", "--effects", EFFECTS, "--format", "json")
            assert code == 0
            tables.append(json.loads(out))
    assert tables[:2] == tables[2:]
    assert tables[0][0]["dups"] > 0 and tables[1][0]["dups"] == 0
    shown = {entry: tuple(map(int, cells)) for entry, *cells in README_ROW.findall(README.read_text())}
    assert shown == {row["variant"]: (row["points"], row["scenarios"], row["with_dups"], row["dups"], row["missing"])
                     for (row,) in tables[:2]}


@pytest.mark.slow
def test_a_service_that_commits_record_then_key_and_dies_between_duplicates_the_keyed_loop(cli):
    """The service is SIGKILLed with the loop at every death and restarts over its database."""
    found = {}
    for commit in ("one-txn", "two-step", "ack-first"):
        code, out, _ = cli("sweep", "--loop", "examples/http_loop.py:keyed", "--effects", EFFECTS, "--depth", "1",
                           "--fault", "tracker-crash", "--commit", commit, "--list", "dups", "--format", "json")
        assert code == 0
        found[commit] = [s["first_crash"] for s in json.loads(out)]
    assert found == {"one-txn": [], "ack-first": [],
                     "two-step": ["record-committed#1", "record-committed#2", "record-committed#3"]}
    code, out, _ = cli("sweep", "--loop", "examples/http_loop.py:keyed", "--effects", EFFECTS, "--depth", "1",
                       "--fault", "tracker-crash", "--commit", "ack-first", "--format", "json")
    (row,) = json.loads(out)
    assert row["missing"] > 0, "an answer sent before the commit, and the commit lost with the service"


def test_a_fault_with_no_form_for_a_served_loop_is_refused_in_one_line(cli):
    code, out, err = cli("sweep", "--loop", "examples/http_loop.py:keyed", "--effects", EFFECTS, "--fault",
                         "reused-run-id")
    assert (code, out) == (2, "")
    assert err.strip().endswith("--fault reused-run-id has no form yet for a loop whose tools call crashlab's service "
                                "(those that have: crash, drifting-model, expired-key, failed-after-effect, interleave, "
                                "late-delivery, power-cut, timeout, tracker-crash, wrong-answer)")


@pytest.mark.slow
def test_a_restart_two_days_later_finds_the_services_key_forgotten_and_duplicates(cli):
    code, out, _ = cli("sweep", "--loop", "examples/http_loop.py:keyed", "--effects", EFFECTS, "--depth", "1",
                       "--fault", "expired-key", "--list", "dups", "--format", "json")
    assert code == 0
    assert [s["id"] for s in json.loads(out)] == [f"keyed+expired-key:{i}~2" for i in (1, 2, 4, 5, 7, 8)]


def test_a_downtime_the_fault_does_not_have_is_refused_in_one_line(cli):
    code, out, err = cli("explain", "keyed+expired-key:1~5", "--loop", "examples/http_loop.py:keyed",
                         "--effects", EFFECTS)
    assert (code, out) == (2, "") and "keyed+expired-key:1~5: the death at process 1's point 1 leaves 2 states (~1, ~2)" in err


@pytest.mark.slow
def test_a_restart_that_cannot_go_on_in_what_the_deaths_left_is_stuck_not_a_harness_error(cli):
    """An ack-first service lost issue A with its death; the restart's comment on A is refused, and the loop
    raises: that is the scenario's outcome, told in its story."""
    code, out, _ = cli("explain", "plain+tracker-crash=ack-first:4:4", "--loop", "examples/http_loop.py:plain",
                       "--effects", EFFECTS, "--format", "json")
    told = json.loads(out)
    assert code == 0 and told["verdict"]["stuck"].startswith("HTTPError: HTTP Error 404: Not Found")


def test_a_loop_that_fails_in_its_uninterrupted_run_fails_the_sweep_in_one_line(cli, tmp_path):
    (tmp_path / "failing.py").write_text("def main():\n    raise RuntimeError('no service configured')\n")
    code, out, err = cli("sweep", "--loop", f"{tmp_path}/failing.py:main", "--effects", EFFECTS)
    assert (code, out) == (3, "") and "main: process 1 failed: RuntimeError: no service configured" in err


@pytest.mark.slow
def test_the_fixture_returns_the_clis_row_and_a_failing_test_prints_the_windows(cli, crash_sweep):
    from examples import http_loop

    effects = {"A": {"issue": "Login fails on Safari"}, "B": {"issue": "Export times out"}, "C": {"comment": "A"}}
    result = crash_sweep(http_loop.plain, effects, name="plain", depth=1)
    code, out, _ = cli("sweep", "--loop", "examples/http_loop.py:plain", "--effects", EFFECTS, "--depth", "1",
                       "--format", "json")
    assert code == 0 and [result.record()] == json.loads(out)
    report = result.report().splitlines()
    assert not result.ok and report[0] == "plain: 9 scenarios; with_dups 6, dups 6"
    assert report[1].startswith("A made twice when the process dies anywhere from `accepted#1` to `answered#1`")
    assert len(report) == 4


@pytest.mark.slow
def test_a_foreign_loop_fills_the_person_and_model_columns_through_the_service(cli):
    """The ladder asks a keyless service's person, and a death before the plan is saved pays the model again."""
    code, out, _ = cli("sweep", "--loop", "examples/http_loop.py:ladder", "--effects", EFFECTS, "--tracker",
                       "keyless", "--depth", "1", "--format", "json")
    (row,) = json.loads(out)
    assert code == 0 and (row["dups"], row["missing"]) == (0, 0)
    # a question for each death between a marker and its result (at marked, accepted, answered: 3 per step);
    # a death between the model's plan and its save pays for the plan again
    assert row["asks"] == 9 and row["calls_plus"] == 1


@pytest.mark.slow
def test_a_wrong_answer_from_the_services_person_duplicates_or_loses(cli):
    code, out, _ = cli("sweep", "--loop", "examples/http_loop.py:ladder", "--effects", EFFECTS, "--tracker",
                       "keyless", "--depth", "1", "--fault", "wrong-answer", "--format", "json")
    (row,) = json.loads(out)
    assert code == 0 and row["dups"] > 0 and row["missing"] > 0


@pytest.mark.slow
def test_a_reply_that_never_comes_makes_the_plain_loops_retry_duplicate_with_no_crash_at_all(cli):
    found = {}
    for entry in ("plain", "keyed"):
        code, out, _ = cli("sweep", "--loop", f"examples/http_loop.py:{entry}", "--effects", EFFECTS, "--depth", "1",
                           "--fault", "timeout", "--list", "dups", "--format", "json")
        assert code == 0
        found[entry] = [s["id"] for s in json.loads(out) if ":" not in s["id"]]  # the runs with no crash
    assert found == {"plain": [f"plain+timeout={k}-applied" for k in (1, 2, 3)], "keyed": []}


def test_a_loop_that_ends_with_sys_exit_0_has_returned_and_one_that_exits_1_has_failed(cli, tmp_path):
    loop = Path(loop_file(tmp_path, [("A", "One")]))
    loop.write_text(loop.read_text() + "\ndef exits(code=0):\n    main()\n    raise SystemExit(code)\n"
                    "\ndef fails():\n    exits(1)\n")
    effects = effects_file(tmp_path, "A: {issue: One}\n")
    code, out, _ = cli("sweep", "--loop", f"{loop}:exits", "--effects", effects, "--depth", "1", "--format", "json")
    assert code == 0 and json.loads(out)[0]["scenarios"] == 1
    code, _, err = cli("sweep", "--loop", f"{loop}:fails", "--effects", effects, "--depth", "1")
    assert code == 3 and "fails: process 1 failed: SystemExit: 1" in err


@pytest.mark.slow
@pytest.mark.parametrize("tracker, duplicates", [("lookup", True), ("fencing", False)])
def test_a_request_on_the_wire_lands_after_the_ladders_lookup_said_no_and_only_a_fence_stops_it(cli, tracker,
                                                                                                duplicates):
    """The book's late delivery against the real service: a death at the service's `sent` leaves the request
    held; it lands at each point of the restart in turn, after the ladder's lookup heard "no" and resent."""
    code, out, _ = cli("sweep", "--loop", "examples/http_loop.py:ladder", "--effects", EFFECTS, "--tracker",
                       tracker, "--fault", "late-delivery", "--format", "json")
    (row,) = json.loads(out)
    assert code == 0 and row["scenarios"] > 3 and (row["missing"], row["stuck"]) == (0, 0)
    assert row["with_dups"] == (row["scenarios"] if duplicates else 0)


def test_a_late_request_is_told_where_it_lands_and_a_landing_the_restart_never_reaches_is_refused(cli):
    args = ("--loop", "examples/http_loop.py:plain", "--effects", EFFECTS, "--format", "json")
    code, out, _ = cli("explain", "plain+late-delivery:1~3", *args)
    told = json.loads(out)
    restart = [line.split() for line in told["processes"][1]["events"]]
    landed = next(k for k, words in enumerate(restart) if "LATE:" in words)
    assert code == 0 and told["verdict"]["duplicates"] == {"A": 1}
    assert restart[landed - 1][0] == "3", "it lands as the restart passes its point 3"
    assert restart[landed][-3:] == ["APPLIES", "it,", "#2"]
    code, out, err = cli("explain", "plain+late-delivery:1~99", *args)
    assert (code, out) == (2, "") and "the restart passes 12 crash points, so a late request lands" in err
    code, out, err = cli("explain", "plain+late-delivery:2~1", *args)
    assert (code, out) == (2, "") and "the death at process 1's point 2 leaves no state these faults" in err
