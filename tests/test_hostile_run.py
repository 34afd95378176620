"""Hostile run directories: `crashlab run` refuses what it cannot vouch for, and its shows write nothing.

A run resumes only a directory whose checkpoint and tracker tell one story, in files crashlab made;
anything else is exit code 2 and one line on stderr that starts with "crashlab: error:" and says
what is wrong, before a byte is written. The states a real death leaves are made once per module by
real processes killed at a crash point, and copied for each test. Cases that could hang or fill
memory run as real processes with a timeout, so a regression fails the test instead of the test run.
"""

from __future__ import annotations

import errno
import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from crashlab.durable.checkpoint import Checkpoint, TurnRecord
from crashlab.durable.store import MAX_CHECKPOINT_BYTES, FileStore
from crashlab.job import Call
from crashlab.job.reader import MAX_CALLS, TEXT_LIMITS
from crashlab.program import locked, write_pid
from crashlab.protocols.points import Recorder

from .conftest import ROOT, SCENARIOS
from .test_hostile_input import assert_refused

TRIAGE = str(SCENARIOS / "triage.yaml")
#: The triage job's crash points where A's request was accepted (its marker saved, no result yet), and
#: where B's was (A's result #1 saved, B's marker saved): what `crashlab run --crash-at N` leaves.
A_ACCEPTED, B_ACCEPTED = 9, 17


def crashlab(*args: str, cwd: Path = ROOT, stdin: int | None = subprocess.DEVNULL,
             timeout: float = 30) -> tuple[int, str, str]:
    """crashlab as a real process: (exit code, stdout, stderr)."""
    done = subprocess.run([sys.executable, "-m", "crashlab", *args], cwd=cwd, stdin=stdin, capture_output=True,
                          text=True, timeout=timeout)
    return done.returncode, done.stdout, done.stderr


@pytest.fixture(scope="module")
def made(tmp_path_factory):
    """Run directories as real runs leave them, by name: killed at A's or B's acceptance, or finished."""
    root = tmp_path_factory.mktemp("made")
    for name, extra in {"a-accepted": ("--crash-at", str(A_ACCEPTED)), "b-accepted": ("--crash-at", str(B_ACCEPTED)),
                        "finished": (), "keyless-a-accepted": ("--tracker", "keyless", "--crash-at", str(A_ACCEPTED))
                        }.items():
        code, _, err = crashlab("run", TRIAGE, "--dir", str(root / name), "--person", "auto", *extra)
        assert code == (0 if not extra else -signal.SIGKILL), err
    return root


@pytest.fixture
def copy(made, tmp_path):
    """A fresh copy of one of the made run directories, -wal and -shm included."""
    def copied(name: str) -> Path:
        return Path(shutil.copytree(made / name, tmp_path / name))
    return copied


def files_in(directory: Path) -> dict[str, bytes]:
    """Every file's bytes, but the -shm's: SQLite's shared-memory index, which every reader of a WAL updates."""
    return {p.name: b"" if p.name.endswith("-shm") else p.read_bytes() for p in sorted(directory.iterdir())}


def resume(run_dir: Path, *extra: str) -> tuple[int, str, str]:
    return crashlab("run", TRIAGE, "--dir", str(run_dir), "--person", "auto", *extra)


# -- 1. a checkpoint that says what the tracker does not hold ---------------------------------------

@pytest.mark.parametrize("loss", ["wal deleted", "database truncated"])
def test_a_tracker_that_lost_what_the_checkpoint_saved_is_not_resumed(copy, loss):
    run_dir = copy("b-accepted")
    if loss == "wal deleted":
        for name in ("tracker.sqlite-wal", "tracker.sqlite-shm"):
            (run_dir / name).unlink()
    else:
        (run_dir / "tracker.sqlite").write_bytes(b"")
    checkpoint = (run_dir / "checkpoint.json").read_bytes()
    assert_refused(*resume(run_dir), f"{run_dir}/checkpoint.json says call A made issue #1, which "
                                     f"{run_dir}/tracker.sqlite does not hold")
    assert (run_dir / "checkpoint.json").read_bytes() == checkpoint


LIES = {
    "an issue number past any tracker's": (2**63, "says call A made issue #9223372036854775808, which"),
    "another call's issue": (2, "says call A made issue #2, which"),
    "a list as an issue number": ([1], "says call A returned a list, which is no issue number"),
    "a refusal no one made": ("refused by the person", "says call A returned 'refused by the person', though the "
                                                       "person did not refuse it"),
}


@pytest.mark.parametrize("lie", list(LIES))
def test_a_checkpoint_that_lies_about_a_result_is_refused(copy, lie):
    run_dir = copy("b-accepted")
    result, message = LIES[lie]
    saved = json.loads((run_dir / "checkpoint.json").read_bytes())
    saved["turns"][0]["results"]["A"] = result
    (run_dir / "checkpoint.json").write_text(json.dumps(saved))
    assert_refused(*resume(run_dir), message)


def test_a_checkpoint_put_back_from_an_older_copy_is_refused(copy):
    """A's marker only, but the tracker holds B's issue too: the restored checkpoint forgot B's attempt."""
    older, run_dir = copy("a-accepted"), copy("b-accepted")
    saved = json.loads((older / "checkpoint.json").read_bytes())
    saved["run"] = json.loads((run_dir / "checkpoint.json").read_bytes())["run"]  # an older copy of the same run
    (run_dir / "checkpoint.json").write_text(json.dumps(saved))
    assert_refused(*resume(run_dir), "tracker.sqlite holds issue #2 (B), of which", "checkpoint.json knows nothing")


@pytest.mark.parametrize("name", ["b-accepted", "keyless-a-accepted"])
def test_a_checkpoint_whose_run_id_is_not_its_trackers_is_refused(copy, name):
    """A hand-edited run ID went unnoticed: the restart sent B again under a new key, and the tracker filed it twice."""
    run_dir = copy(name)
    saved = json.loads((run_dir / "checkpoint.json").read_bytes())
    saved["run"] = "0" * 32
    (run_dir / "checkpoint.json").write_text(json.dumps(saved))
    before = files_in(run_dir) | {"lock": b""}
    assert_refused(*resume(run_dir), f"{run_dir}/checkpoint.json is not {run_dir}/tracker.sqlite's: its run ID "
                   f"'{'0' * 32}' did not make issue #1 (A) (its key is another run's)",
                   "put back the run's own checkpoint, or use a new run directory")
    assert files_in(run_dir) | {"lock": b""} == before  # but the pid in the lock


# -- 2. records and no checkpoint ---------------------------------------------------------------

@pytest.mark.parametrize("name", ["finished", "b-accepted"])
def test_a_tracker_with_records_and_no_checkpoint_is_not_run_again(copy, name):
    run_dir = copy(name)
    (run_dir / "checkpoint.json").unlink()
    code, out, err = resume(run_dir)
    assert_refused(code, out, err, "tracker.sqlite holds", "records of a run (issue #1 (A) first) but",
                   "checkpoint.json is missing")
    assert not (run_dir / "checkpoint.json").exists()
    assert [r["call"] for r in json.loads(crashlab("tracker", "show", str(run_dir), "--format", "json")[1])] == \
        ["A", "B", "C"][: 3 if name == "finished" else 2]


# -- 3. symlinks and other strangers in the run directory ---------------------------------------

@pytest.mark.parametrize("name", ["lock", "checkpoint.json.tmp", "checkpoint.json", "tracker.sqlite"])
def test_a_symlink_in_the_run_directory_is_refused_and_its_target_untouched(copy, tmp_path, name):
    run_dir = copy("a-accepted")
    victim = tmp_path / "victim"
    original = run_dir / name
    victim.write_bytes(original.read_bytes() if original.exists() else b"precious\n")
    original.unlink(missing_ok=True)
    original.symlink_to(victim)
    before = victim.read_bytes()
    assert_refused(*resume(run_dir), f"{original} is a symlink, not the file crashlab made")
    assert victim.read_bytes() == before


def test_the_store_never_writes_through_a_stale_temp_file(tmp_path):
    """Past the directory's check too: a symlink put at checkpoint.json.tmp is replaced, never followed."""
    victim = tmp_path / "victim"
    victim.write_bytes(b"precious\n")
    (tmp_path / "checkpoint.json.tmp").symlink_to(victim)
    store = FileStore(tmp_path, Recorder())
    store.save(Checkpoint.new("r"))
    assert victim.read_bytes() == b"precious\n"
    assert store.read() == Checkpoint.new("r")


STRANGERS = {
    "lock a directory": ("lock", os.mkdir),
    "lock a FIFO": ("lock", os.mkfifo),
    "checkpoint a directory": ("checkpoint.json", os.mkdir),
    "checkpoint a FIFO": ("checkpoint.json", os.mkfifo),
    "temp file a directory": ("checkpoint.json.tmp", os.mkdir),
}


@pytest.mark.parametrize("case", list(STRANGERS))
def test_an_entry_that_is_not_a_regular_file_is_refused(copy, case):
    run_dir = copy("a-accepted")
    name, make = STRANGERS[case]
    (run_dir / name).unlink(missing_ok=True)
    make(run_dir / name)
    kind = "a directory" if make is os.mkdir else "a FIFO"
    assert_refused(*resume(run_dir), f"{run_dir / name} is {kind}, not the file crashlab made")


# -- 4. the lock cannot be deleted from under a run ---------------------------------------------

def test_deleting_the_lock_file_does_not_let_a_second_run_act(cli, tmp_path):
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    with locked(run_dir):
        write_pid(run_dir / "lock")
        (run_dir / "lock").unlink()
        code, out, err = cli("run", TRIAGE, "--dir", str(run_dir), "--person", "auto")
    assert_refused(code, out, err, f"{run_dir} is in use by another crashlab run (pid ?)")
    assert not (run_dir / "checkpoint.json").exists()


def test_a_run_refused_before_it_starts_leaves_no_lock_and_no_directory_it_made(cli, tmp_path):
    """A service that does not answer: the new directory goes again, an existing one gains no lock file."""
    for run_dir, existed in ((tmp_path / "new", False), (tmp_path / "old", True)):
        if existed:
            run_dir.mkdir()
        code, out, err = cli("run", TRIAGE, "--dir", str(run_dir), "--person", "auto",
                             "--service", "http://127.0.0.1:1")
        assert (code, out) == (2, "") and "did not answer" in err
        assert run_dir.exists() == existed and (not existed or list(run_dir.iterdir()) == [])


# -- 5. the shows write nothing -----------------------------------------------------------------

def test_tracker_show_refuses_another_programs_database_and_leaves_it_as_it_was(tmp_path):
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    with sqlite3.connect(run_dir / "tracker.sqlite") as other:
        other.execute("CREATE TABLE invoices (id INTEGER PRIMARY KEY, total REAL)")
        other.execute("INSERT INTO invoices (total) VALUES (9.5)")
    other.close()
    before = files_in(run_dir)
    assert_refused(*crashlab("tracker", "show", str(run_dir)), "tracker.sqlite: not a crashlab tracker database")
    assert files_in(run_dir) == before  # no tables added, still in its own journal mode, nothing beside it


def test_tracker_show_refuses_an_empty_database(tmp_path):
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (run_dir / "tracker.sqlite").write_bytes(b"")
    assert_refused(*crashlab("tracker", "show", str(run_dir)), "not a crashlab tracker database: it records no job")


def test_the_shows_leave_a_killed_runs_files_as_they_were(copy):
    """No checkpoint of the WAL into the database, no -wal or -shm deleted: a look at a dead run is only a look."""
    run_dir = copy("b-accepted")
    before = files_in(run_dir)
    code, out, _ = crashlab("tracker", "show", str(run_dir), "--format", "json")
    assert code == 0 and [r["call"] for r in json.loads(out)] == ["A", "B"]
    assert crashlab("checkpoint", "show", str(run_dir))[1] == "T1 open A=1 B:marker\n"
    assert files_in(run_dir) == before


# -- 7. checkpoints that would hang the reader or fill its memory -------------------------------

@pytest.mark.parametrize("command", ["checkpoint", "run"])
@pytest.mark.parametrize("case", ["a FIFO", "a symlink to /dev/zero", "a 3 GB sparse file"])
def test_a_checkpoint_that_is_no_file_or_too_large_is_refused_at_once(copy, command, case):
    run_dir = copy("a-accepted")
    path = run_dir / "checkpoint.json"
    path.unlink()
    if case == "a FIFO":
        os.mkfifo(path)
    elif case == "a symlink to /dev/zero":
        path.symlink_to("/dev/zero")
    else:
        with open(path, "wb") as sparse:
            sparse.truncate(3 << 30)
    args = ("checkpoint", "show", str(run_dir)) if command == "checkpoint" else ("run", TRIAGE, "--dir", str(run_dir))
    code, out, err = crashlab(*args, timeout=20)
    message = {"a FIFO": "is a FIFO", "a symlink to /dev/zero": "is a symlink",
               "a 3 GB sparse file": f"larger than any checkpoint ({MAX_CHECKPOINT_BYTES} bytes at most)"}[case]
    assert_refused(code, out, err, message)


def test_the_checkpoint_bound_holds_the_largest_checkpoint_of_the_largest_job_the_reader_accepts():
    """Half the calls file issues with the longest texts, the other half search and hit every one of them,
    and every call has a result, a marker, a decision, an approval and a fenced key: no save is larger."""
    longest = {what: "\U0001f600" * TEXT_LIMITS[what] for what in ("title", "body", "query")}  # 4 bytes a character
    half = MAX_CALLS // 2
    files = [Call(f"{k:0>64}", "create_issue", {"title": longest["title"], "body": longest["body"]}, True, True)
             for k in range(half)]
    searches = [Call(f"s{k:0>63}", "search", {"query": longest["query"]}) for k in range(half)]
    every = {call.id: call for call in files + searches}
    results = {**{call.id: 99_999 for call in files}, **{call.id: [99_999] * half for call in searches}}
    turn = TurnRecord(1, tuple(every.values()), results, dict.fromkeys(every, 1e9), dict.fromkeys(every, "lookup"),
                      dict.fromkeys(every, True), dict.fromkeys(every, 99), True)
    largest = Checkpoint("r" * 64, (turn,), "\U0001f600" * TEXT_LIMITS["answer"]).to_json()
    assert len(largest) <= MAX_CHECKPOINT_BYTES < 1 << 30  # no valid checkpoint is refused, no 3 GB file read


# -- 11. tracebacks where one line is owed ------------------------------------------------------

@pytest.mark.skipif(os.geteuid() == 0, reason="root writes in a read-only directory")
def test_a_read_only_run_directory_is_one_line(copy):
    run_dir = copy("a-accepted")
    (run_dir / "lock").unlink()
    run_dir.chmod(0o555)
    try:
        assert_refused(*resume(run_dir), "cannot write", "Permission denied")
    finally:
        run_dir.chmod(0o755)


@pytest.mark.parametrize("pace", ["inf", "nan", "1e308", "-1", "3601"])
def test_a_pace_that_is_not_a_sane_number_of_seconds_is_refused(cli, tmp_path, pace):
    assert_refused(*cli("run", TRIAGE, "--dir", str(tmp_path / "run"), "--pace", pace),
                   "Invalid value for '--pace'", "is not a number of seconds from 0 to 3600")
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize("command", ["checkpoint", "run"])
def test_a_checkpoint_nested_too_deeply_is_a_decode_error(copy, command):
    run_dir = copy("a-accepted")
    saved = (run_dir / "checkpoint.json").read_bytes()
    deep = b"[" * 100_000 + b"]" * 100_000
    (run_dir / "checkpoint.json").write_bytes(saved.replace(b'"args":{', b'"args":{"deep":' + deep + b",", 1))
    args = ("checkpoint", "show", str(run_dir)) if command == "checkpoint" else ("run", TRIAGE, "--dir", str(run_dir))
    assert_refused(*crashlab(*args), "checkpoint.json: corrupt checkpoint: nested too deeply to read")


TAMPERINGS = {
    "a table of another shape": ("DROP TABLE keys; CREATE TABLE keys (key TEXT, number TEXT)", "tables are not crashlab's"),
    "a view in place of a table": ("DROP TABLE decisions; CREATE VIEW decisions AS SELECT 'k' AS key, 1 AS approved",
                                   "tables are not crashlab's"),
    "a table added": ("CREATE TABLE extra (x)", "tables are not crashlab's"),
    "a huge count": ("INSERT OR REPLACE INTO counts (name, value) VALUES ('asks', 4611686018427387904)",
                     "its counts table holds a value crashlab never writes"),
    "an issue number that is text": ("UPDATE records SET number = 'one' WHERE call = 'A'",
                                     "its records table holds a value crashlab never writes"),
    "a text that is binary": ("UPDATE records SET text = X'ff00' WHERE call = 'A'", "its records table holds a value"),
}


@pytest.mark.parametrize("command", ["tracker", "run"])
@pytest.mark.parametrize("case", list(TAMPERINGS))
def test_a_tampered_tracker_is_refused(copy, case, command):
    run_dir = copy("b-accepted")
    sql, message = TAMPERINGS[case]
    with sqlite3.connect(run_dir / "tracker.sqlite") as db:
        db.executescript(sql)
    db.close()
    args = ("tracker", "show", str(run_dir)) if command == "tracker" else ("run", TRIAGE, "--dir", str(run_dir))
    assert_refused(*crashlab(*args), f"{run_dir}/tracker.sqlite: not a crashlab tracker database", message)


EMPTY_BODIES = """name: empty-bodies
turns:
  - calls:
      - {id: A, tool: create_issue, args: {title: Login fails, body: ""}}
      - {id: C, tool: comment, args: {issue: "$A", body: ""}}
  - answer: done
"""


def test_a_comment_with_an_empty_body_is_shown_to_the_person_and_in_the_tracker(tmp_path):
    job = tmp_path / "job.yaml"
    job.write_text(EMPTY_BODIES)
    run_dir = str(tmp_path / "run")
    whole = crashlab("run", str(job), "--dir", str(tmp_path / "whole"), "--tracker", "keyless", "--person", "auto")
    accepted = [line.split()[1] for line in whole[2].splitlines() if line.endswith("accepted  turn 1 call C (comment)")]
    assert crashlab("run", str(job), "--dir", run_dir, "--tracker", "keyless", "--crash-at", accepted[0])[0] == \
        -signal.SIGKILL
    code, _, err = answered(job, run_dir, "1\n")
    assert code == 0, err
    assert "  comment #1 on #1 (C)  key " in err and err.count("''") == 1
    code, out, _ = crashlab("tracker", "show", run_dir)
    assert code == 0 and [line.split()[:3] for line in out.splitlines()[2:]] == [["issue", "1", "A"],
                                                                                ["comment", "1", "C"]]


def answered(job: Path, run_dir: str, answer: str) -> tuple[int, str, str]:
    """`crashlab run` with the person at the terminal typing `answer`."""
    done = subprocess.run([sys.executable, "-m", "crashlab", "run", str(job), "--dir", run_dir], cwd=ROOT,
                          input=answer, capture_output=True, text=True, timeout=30)
    return done.returncode, done.stdout, done.stderr


def test_input_that_ends_before_the_person_answers_is_one_line(copy):
    run_dir = copy("keyless-a-accepted")
    code, out, err = crashlab("run", TRIAGE, "--dir", str(run_dir), "--person", "ask")
    assert (code, out) == (2, "") and "Traceback" not in err
    assert err.splitlines()[-1].startswith("crashlab: error: no answer: the input ended before the person answered")
    assert crashlab("checkpoint", "show", str(run_dir))[1] == "T1 open A:ask B:-\n"  # it asks again next time


@pytest.mark.parametrize("where", ["checkpoint", "tracker"])
def test_a_full_disk_during_a_run_is_one_line(cli, tmp_path, monkeypatch, where):
    def full(*args, **kwargs):
        if where == "checkpoint":
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        raise sqlite3.OperationalError("database or disk is full")

    target = "crashlab.durable.store.create_afresh" if where == "checkpoint" else \
        "crashlab.world.sqlite.SqliteTracker.request"
    monkeypatch.setattr(target, full)
    code, out, err = cli("run", TRIAGE, "--dir", str(tmp_path / "run"), "--person", "auto")
    assert (code, out) == (2, "") and "Traceback" not in err
    assert err.splitlines()[-1].startswith("crashlab: error: ")
    assert ("No space left on device" if where == "checkpoint" else "database or disk is full") in err.splitlines()[-1]


def test_a_reader_that_goes_away_ends_the_run_without_a_traceback(tmp_path):
    run_dir = str(tmp_path / "run")
    with open(tmp_path / "stderr", "w") as errors:
        process = subprocess.Popen([sys.executable, "-m", "crashlab", "run", TRIAGE, "--dir", run_dir, "--person",
                                    "auto"], cwd=ROOT, stdout=subprocess.PIPE, stderr=errors)
        process.stdout.close()  # as `| head -0` does: nothing will ever read the output
        assert process.wait(timeout=30) in (0, 141)  # 0 if it wrote all it says before it saw the pipe closed
    assert "Traceback" not in (tmp_path / "stderr").read_text()
    assert resume(Path(run_dir))[0] == 0


def test_a_run_whose_stderr_reader_goes_away_stops_quietly_with_sigpipes_code_and_resumes(tmp_path):
    """`crashlab run ... 2>&1 | head`: it exited 1 (a check that did not hold) with no word; now 141, a death by
    SIGPIPE's, as Ctrl-C's is 130. What it did stands, and the next run finishes it, each effect once."""
    run_dir = tmp_path / "run"
    process = subprocess.Popen([sys.executable, "-m", "crashlab", "run", TRIAGE, "--dir", str(run_dir), "--person",
                                "auto", "--pace", "0.05"], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True)
    assert process.stderr is not None and process.stdout is not None
    while not process.stderr.readline().startswith("point 12 "):  # A's issue made, its result being saved
        pass
    process.stderr.close()
    assert (process.stdout.read(), process.wait(timeout=30)) == ("", 141)
    assert json.loads((run_dir / "checkpoint.json").read_text())["answer"] is None  # stopped on its way
    code, out, err = resume(run_dir)
    assert code == 0, err
    assert out.splitlines()[-1] == "the tracker holds issue #1 (A), issue #2 (B), comment #1 on #1 (C)"


# -- 14. what a run accepted without a word -----------------------------------------------------

def test_an_empty_dir_is_refused_and_the_current_directory_untouched(tmp_path):
    code, out, err = crashlab("run", TRIAGE, "--dir", "", cwd=tmp_path)
    assert_refused(code, out, err, "Invalid value for '--dir': must not be empty")
    assert list(tmp_path.iterdir()) == []


def test_another_job_of_the_same_name_is_refused(copy, tmp_path):
    run_dir = copy("b-accepted")
    other = tmp_path / "triage.yaml"
    other.write_text(Path(TRIAGE).read_text().replace("Same root cause", "A different comment"))
    assert_refused(*crashlab("run", str(other), "--dir", str(run_dir), "--person", "auto"),
                   "tracker.sqlite was made for another job named 'triage': its calls or answer differ")


def test_a_tracker_whose_meta_was_wiped_is_refused(copy):
    run_dir = copy("b-accepted")
    with sqlite3.connect(run_dir / "tracker.sqlite") as db:
        db.execute("DELETE FROM meta")
    db.close()
    assert_refused(*resume(run_dir), "tracker.sqlite holds a run but no job/fingerprint/tracker in its meta")


def test_a_crash_point_the_run_never_reaches_is_said(tmp_path):
    code, out, err = resume(tmp_path / "run", "--crash-at", str(10**23))
    assert code == 0 and out.startswith("finished:")
    assert err.splitlines()[-1] == "--crash-at 100000000000000000000000 never fired: this process passed only 43 " \
                                   "crash points"


def test_a_comment_on_an_issue_that_does_not_exist_is_refused_by_the_tracker(tmp_path):
    job = tmp_path / "job.yaml"
    job.write_text("name: nowhere\nturns:\n  - calls:\n      - {id: C, tool: comment, args: {issue: 5, body: b}}\n"
                   "  - answer: done\n")
    run_dir = tmp_path / "run"
    assert crashlab("run", str(job), "--dir", str(run_dir), "--person", "auto")[0] == 0
    assert json.loads(crashlab("tracker", "show", str(run_dir), "--format", "json")[1]) == []
    saved = json.loads(crashlab("checkpoint", "show", str(run_dir), "--format", "json")[1])
    assert saved["turns"][0]["results"] == {"C": "not made: the tracker refused it, there is no issue #5 to comment on"}


REFUSED_ISSUE = """name: refused-issue
turns:
  - calls:
      - {id: A, tool: create_issue, args: {title: Login fails, body: b}, needs_approval: true}
      - {id: C, tool: comment, args: {issue: "$A", body: Same root cause}}
  - answer: done
"""


def test_a_refused_issue_gets_no_comment(tmp_path):
    job = tmp_path / "job.yaml"
    job.write_text(REFUSED_ISSUE)
    run_dir = str(tmp_path / "run")
    code, out, err = crashlab("run", str(job), "--dir", run_dir, "--person", "no")
    assert code == 0, err
    assert out.splitlines()[-1] == "the tracker holds nothing"
    saved = json.loads(crashlab("checkpoint", "show", run_dir, "--format", "json")[1])
    assert saved["turns"][0]["results"] == {"A": "refused by the person", "C": "not made: call A made no issue"}

