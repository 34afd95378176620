"""`crashlab run` is a real program: it resumes after a real SIGKILL, refuses what it must, shows its world."""

import contextlib
import io
import json
import os
import signal
import socket
import sqlite3
import subprocess
import sys
import threading

import pytest

from crashlab import program
from crashlab.durable.checkpoint import Checkpoint, TurnRecord
from crashlab.job import Call, load_job
from crashlab.loops.keys import key
from crashlab.program import locked, write_pid
from crashlab.protocols.points import Recorder
from crashlab.world.sqlite import Database, SqlitePerson, open_world

from .conftest import ROOT, SCENARIOS

TRIAGE = str(SCENARIOS / "triage.yaml")


def crashlab(*args: str) -> subprocess.CompletedProcess:
    """The real program in a process of its own, as a user starts it."""
    return subprocess.run([sys.executable, "-m", "crashlab", *args], cwd=ROOT, capture_output=True, text=True, timeout=60)


def calls(rows):
    return [r["call"] for r in rows]


def test_a_process_killed_at_a_crash_point_dies_there_and_the_next_one_finishes(tmp_path):
    run_dir = str(tmp_path / "run")
    killed = crashlab("run", TRIAGE, "--dir", run_dir, "--person", "auto", "--crash-at", "9")
    assert killed.returncode == -signal.SIGKILL
    assert killed.stderr.splitlines()[-1] == "point 9 accepted  turn 1 call A (create_issue)"
    assert crashlab("checkpoint", "show", run_dir).stdout == "T1 open A:marker B:-\n"

    resumed = crashlab("run", TRIAGE, "--dir", run_dir, "--person", "auto")
    assert resumed.returncode == 0, resumed.stderr
    assert "resuming" in resumed.stderr and "T1 open A:marker B:-" in resumed.stderr
    assert resumed.stdout.splitlines()[-1] == "the tracker holds issue #1 (A), issue #2 (B), comment #1 on #1 (C)"


def test_running_a_finished_run_again_says_so_and_changes_nothing(cli, tmp_path):
    run_dir = tmp_path / "run"
    assert cli("run", TRIAGE, "--dir", str(run_dir), "--person", "auto")[0] == 0
    before = (run_dir / "checkpoint.json").read_bytes(), cli("tracker", "show", str(run_dir), "--format", "json")[1]
    code, out, err = cli("run", TRIAGE, "--dir", str(run_dir))
    assert (code, err) == (0, "")
    assert out.startswith(f"{run_dir}: already finished, nothing to do.")
    assert before == ((run_dir / "checkpoint.json").read_bytes(), cli("tracker", "show", str(run_dir), "--format", "json")[1])


def test_tracker_show_lists_every_record_and_marks_a_calls_duplicates(cli, tmp_path):
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    a = Call("A", "create_issue", {"title": "Login fails", "body": "blank page"})
    with Database(run_dir / "tracker.sqlite") as db:
        tracker = open_world(db, load_job(TRIAGE), Recorder(), "keyless").tracker
        tracker.request(a, a.args, key="k1")
        tracker.request(a, a.args, key="k1")  # keyless: applied twice
    code, out, _ = cli("tracker", "show", str(run_dir), "--format", "json")
    rows = json.loads(out)
    assert code == 0 and calls(rows) == ["A", "A"] and [r["number"] for r in rows] == [1, 2]
    assert all(r["duplicate"] for r in rows) and rows[0]["text"] == "Login fails\nblank page"
    assert set(rows[0]) == {"kind", "number", "call", "key", "issue", "text", "duplicate"}
    code, out, _ = cli("tracker", "show", str(run_dir))
    assert code == 0 and out.count("DUPLICATE") == 2 and "Login fails" in out


def test_checkpoint_show_prints_the_short_form_or_the_json(cli, tmp_path):
    run_dir = str(tmp_path / "run")
    cli("run", TRIAGE, "--dir", run_dir, "--person", "auto")
    assert cli("checkpoint", "show", run_dir)[1] == "T1 closed A=1 B=2 · T2 closed S=[1] C=1 · finished\n"
    data = json.loads(cli("checkpoint", "show", run_dir, "--format", "json")[1])
    assert data["answer"].startswith("Filed two issues") and len(data["run"]) == 32  # a uuid4, in hex


def test_a_second_run_on_a_locked_directory_exits_2_and_does_nothing(cli, tmp_path):
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    with locked(run_dir):
        write_pid(run_dir / "lock")
        code, out, err = cli("run", TRIAGE, "--dir", str(run_dir), "--person", "auto")
    assert (code, out) == (2, "")
    assert f"{run_dir} is in use by another crashlab run (pid {os.getpid()})" in err and err.count("\n") == 1
    assert not (run_dir / "checkpoint.json").exists()


def test_bad_input_is_one_line_and_exit_2(cli, tmp_path):
    made = tmp_path / "made"
    assert cli("run", TRIAGE, "--dir", str(made), "--tracker", "keyless", "--person", "auto")[0] == 0
    corrupt = tmp_path / "corrupt"
    corrupt.mkdir()
    (corrupt / "tracker.sqlite").touch()
    (corrupt / "checkpoint.json").write_text('{"format": 1, "run": "x", "tu')
    cases = {
        ("run", TRIAGE, "--dir", str(tmp_path / "absent" / "run")): "absent does not exist",
        ("run", TRIAGE, "--dir", str(made), "--tracker", "keyed"): "was made for tracker 'keyless', not 'keyed'",
        ("run", str(SCENARIOS / "approval.yaml"), "--dir", str(made)): "belongs to another job: its turn 1",
        ("run", TRIAGE, "--dir", str(corrupt)): "corrupt or truncated checkpoint",
        ("run", TRIAGE, "--dir", str(made), "--tracker", "sometimes"): "'sometimes' is not one of 'keyed', 'keyless', 'lookup'",
        ("run", TRIAGE, "--dir", str(made), "--person", "maybe"): "'maybe' is not one of 'ask', 'yes', 'no', 'auto'",
        ("run", "absent.yaml", "--dir", str(made)): "absent.yaml: no such job file",
        ("tracker", "show", str(tmp_path / "nowhere")): "no such run directory",
        ("tracker", "show", str(tmp_path)): "not a run directory (no tracker.sqlite)",
        ("checkpoint", "show", str(tmp_path / "nowhere")): "no such run directory",
    }
    for args, message in cases.items():
        code, out, err = cli(*args)
        assert (code, out) == (2, ""), args
        assert err.count("\n") == 1 and message in err and "Traceback" not in err, (args, err)


def test_the_person_on_the_terminal_sees_the_trackers_records_and_answers(cli, tmp_path, monkeypatch):
    """Under the keyless tracker, a marker with no result is a question only the person can answer."""
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    job = load_job(TRIAGE)
    a = job.turns[0].calls[0]
    with Database(run_dir / "tracker.sqlite") as db:
        sent = key("r", "A")  # what run r sends for A
        open_world(db, job, Recorder(), "keyless").tracker.request(a, a.args, key=sent)  # it did happen, as #1
    died_after_a = Checkpoint.new("r").with_turn(TurnRecord.reply(1, job.turns[0].calls)).with_marker("A", 0.0)
    (run_dir / "checkpoint.json").write_bytes(died_after_a.to_json())
    monkeypatch.setattr("sys.stdin", io.StringIO("1\n"))
    code, out, err = cli("run", TRIAGE, "--dir", str(run_dir))
    assert code == 0, err
    assert f"  issue #1 (A)  key {sent}  'Login fails on Safari'" in err
    assert "Did call A (create_issue) reach the tracker? Its number, or no (1, no) [1]:" in err
    assert out.splitlines()[-1] == "the tracker holds issue #1 (A), issue #2 (B), comment #1 on #1 (C)"


def run_killed_at_statement(run_dir, n: int | None) -> list[str]:
    """`crashlab run` of the triage job in a forked process, SIGKILLed as the `n`-th SQL statement of its
    connections begins (with None, never): the statements it began before its first crash point."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: it never returns from here
        try:
            began: list[str] = []
            connect = sqlite3.connect

            def began_statement(sql: str) -> None:
                began.append(sql)
                if len(began) == n:
                    os.kill(os.getpid(), signal.SIGKILL)

            def traced(*args, **kwargs):
                connection = connect(*args, **kwargs)
                connection.set_trace_callback(began_statement)
                return connection

            sqlite3.connect = traced
            program.run(load_job(TRIAGE), run_dir, person=SqlitePerson,
                        echo=lambda line: line.startswith("point 1 ") and os.write(write, json.dumps(began).encode()))
        finally:
            os._exit(0)
    os.close(write)
    with os.fdopen(read, "rb") as said:
        told = said.read()
    os.waitpid(pid, 0)
    return json.loads(told) if told else []


def test_a_run_killed_before_any_sql_statement_of_its_trackers_creation_is_resumed_with_every_effect_once(tmp_path):
    """Between any two statements SQLite runs for `crashlab run` before its first crash point (looking at DIR,
    making the tracker, claiming it for the job), a kill leaves a directory the next run finishes, A, B and C
    once, with nothing of the dead creation left beside the tracker. (Made by one autocommit statement per
    table, a kill between two left a tracker the next run refused: its tables are not crashlab's.)"""
    statements = run_killed_at_statement(tmp_path / "whole", None)
    assert any(sql.strip().startswith("CREATE TABLE") for sql in statements)
    failed = {}
    for n in range(1, len(statements) + 1):
        run_dir = tmp_path / f"kill-{n}"
        assert run_killed_at_statement(run_dir, n) == []  # it died at the statement, before its first point
        try:
            finished = program.run(load_job(TRIAGE), run_dir, person=SqlitePerson)
        except program.RunError as error:
            failed[statements[n - 1]] = str(error)
            continue
        scratch = [name for name in os.listdir(run_dir) if name.startswith("tracker.sqlite.new")]
        if [r.call for r in finished.records] != ["A", "B", "C"] or scratch:
            failed[statements[n - 1]] = f"the tracker holds {[r.call for r in finished.records]}, beside {scratch}"
    assert failed == {}


# The tracker as a running service: `crashlab run --service URL`.


def served(tmp_path, tracker: str = "keyed"):
    from crashlab.service.process import ServiceProcess

    return ServiceProcess.start(tmp_path / f"service-{tracker}", tracker, control=False)


def against(service) -> tuple[str, ...]:
    """The options that point a run at `service`: its URL, and the token it printed as it started."""
    return "--service", service.url, "--service-token", service.token


def test_a_run_killed_where_the_service_committed_resumes_against_it_and_makes_each_effect_once(tmp_path):
    """The service is another process: the agent's death leaves its records standing, as a real tracker's."""
    with served(tmp_path) as service:
        run_dir = str(tmp_path / "run")
        killed = crashlab("run", TRIAGE, "--dir", run_dir, "--person", "auto", *against(service),
                          "--crash-at", "9")
        assert killed.returncode == -signal.SIGKILL
        assert killed.stderr.splitlines()[-1] == "point 9 accepted  turn 1 call A (create_issue)"
        assert [r["title"] for r in service.state()["records"]] == ["Login fails on Safari"]
        resumed = crashlab("run", TRIAGE, "--dir", run_dir, "--person", "auto", *against(service))
        assert resumed.returncode == 0, resumed.stderr
        assert resumed.stdout.splitlines()[-1] == "the tracker holds issue #1 (A), issue #2 (B), comment #1 on #1 (C)"
        assert [(r["kind"], r["number"]) for r in service.state()["records"]] == [
            ("issue", 1), ("issue", 2), ("comment", 1)]


def test_against_a_keyless_service_the_restart_asks_and_still_makes_each_effect_once(tmp_path):
    with served(tmp_path, "keyless") as service:
        run_dir = str(tmp_path / "run")
        crashlab("run", TRIAGE, "--dir", run_dir, "--person", "auto", *against(service), "--crash-at", "9")
        resumed = crashlab("run", TRIAGE, "--dir", run_dir, "--person", "auto", *against(service))
        assert resumed.returncode == 0, resumed.stderr
        assert "(keyless tracker)" in resumed.stderr
        assert len(service.state()["records"]) == 3


def test_a_service_that_is_not_the_runs_is_refused_in_one_line(cli, tmp_path):
    with served(tmp_path, "lookup") as service:
        code, out, err = cli("run", TRIAGE, "--dir", str(tmp_path / "run"), "--person", "auto", *against(service),
                             "--tracker", "keyed")
        assert (code, out) == (2, "") and f"the service at {service.url} is a lookup tracker, and this run is keyed" \
            in err
        local = tmp_path / "local"
        assert cli("run", TRIAGE, "--dir", str(local), "--person", "auto")[0] == 0
        code, out, err = cli("run", TRIAGE, "--dir", str(local), "--person", "auto", *against(service))
        assert (code, out) == (2, "") and "holds the records of a run on its own tracker" in err
    code, out, err = cli("run", TRIAGE, "--dir", str(tmp_path / "gone"), "--person", "auto", *against(service))
    assert (code, out) == (2, "") and f"the service at {service.url} did not answer GET /_crashlab/state" in err
    assert len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("says", [b"SSH-2.0-OpenSSH_9.6\r\n", b"\x00\xff" * 64, b"HTTP/1.1 abc\r\n\r\n"],
                         ids=["ssh", "binary", "a bad status"])
def test_a_port_that_does_not_speak_http_is_one_line(cli, tmp_path, says):
    """`run --service` at a port that answers otherwise: a 61-line BadStatusLine traceback."""
    server = socket.create_server(("127.0.0.1", 0))

    def answer() -> None:
        with contextlib.suppress(OSError):
            while True:
                connection, _ = server.accept()
                with connection:
                    connection.recv(65536)  # the request, read: a close with it unread would be a reset
                    connection.sendall(says)

    threading.Thread(target=answer, daemon=True).start()
    url = f"http://127.0.0.1:{server.getsockname()[1]}"
    try:
        code, out, err = cli("run", TRIAGE, "--dir", str(tmp_path / "run"), "--person", "auto", "--service", url,
                             "--service-token", "t")
    finally:
        server.close()
    assert (code, out) == (2, "") and err.count("\n") == 1, err
    assert f"the service at {url} does not speak HTTP: to GET /_crashlab/state it said " in err
    assert "is it the URL crashlab serve printed?" in err


def test_a_run_against_a_service_without_its_token_is_refused_in_one_line_that_names_the_variable(cli, tmp_path):
    with served(tmp_path) as service:
        code, out, err = cli("run", TRIAGE, "--dir", str(tmp_path / "run"), "--person", "auto", "--service",
                             service.url)
        assert (code, out) == (2, "") and len(err.strip().splitlines()) == 1
        assert "refused GET /_crashlab/state without its token: set CRASHLAB_SERVICE_TOKEN" in err
        code, out, err = cli("run", TRIAGE, "--dir", str(tmp_path / "run"), "--person", "auto", "--service",
                             service.url, "--service-token", "guessed")
        assert (code, out) == (2, "") and "with a token that is not its own" in err
        assert service.state()["records"] == []
