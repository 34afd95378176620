"""A death takes the whole process with it, and no process runs for ever.

Each process a sweep runs for real is in a cgroup of its own and leads a process group. Its death
at a crash point takes every process it started (a forked helper, a `subprocess.Popen` child, a
helper in a session of its own), and when it ends any such process still running is killed:
nothing of a scenario outlives it, to write into the next. Where there is no cgroup, a helper that
left the group and outlived its process fails its scenario, named. A process that runs past `--time-limit` is killed the same way: a restart that hangs is
stuck, a first run that hangs fails the sweep in one line, and a sweep stopped by SIGTERM leaves
no process of the loop behind.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from functools import partial
from pathlib import Path

import pytest

import crashlab
from crashlab.api import Run, sweep

from .conftest import ROOT

#: A loop with no crashlab import: it files one issue at the service, saving that it did.
LOOP = '''
import json, os, subprocess, sys, time, urllib.request
from pathlib import Path

MARK = {mark!r}

def here():
    return Path(os.environ["CRASHLAB_RUN_DIR"])

def file_once():
    if (here() / "done").exists():
        return
    request = urllib.request.Request(os.environ["CRASHLAB_TRACKER_URL"] + "/issues", b'{{"title": "One"}}',
                                     {{"Content-Type": "application/json"}})
    urllib.request.urlopen(request).close()
    (here() / "done").write_text("1")

def helpers():
    """A Popen child, a forked helper and one in a session of its own, each writing MARK 1.5 s later, if still
    alive."""
    subprocess.Popen([sys.executable, "-c", f"import time; time.sleep(1.5); open({{MARK!r}}, 'a').write('popen')"])
    for session in (False, True):
        if os.fork() == 0:
            if session:
                os.setsid()
            time.sleep(1.5)
            with open(MARK, "a") as mark:
                mark.write("session" if session else "fork")
            os._exit(0)

def leaves_helpers():
    helpers()
    file_once()

def hangs_on_restart():
    if (here() / "started").exists():
        with open(MARK, "w") as mark:
            mark.write(str(os.getpid()))
        time.sleep(3600)
    (here() / "started").write_text("")
    file_once()

def hangs():
    helpers()
    with open(MARK, "w") as mark:
        mark.write(str(os.getpid()))
    time.sleep(3600)
'''


@pytest.fixture
def loop(tmp_path: Path) -> tuple[Path, Path, Path]:
    """The loop's file, its effects, and the file its helpers and hung processes write to."""
    mark = tmp_path / "mark"
    path = tmp_path / "loop.py"
    path.write_text(LOOP.format(mark=str(mark)))
    effects = tmp_path / "effects.yaml"
    effects.write_text("A: {issue: One}\n")
    return path, effects, mark


def gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return Path(f"/proc/{pid}/stat").read_text().split()[2] == "Z"  # a zombie not yet reaped by init


def test_the_helpers_a_process_started_die_with_it_and_when_it_ends(cli, loop):
    path, effects, mark = loop
    code, out, _ = cli("sweep", "--loop", f"{path}:leaves_helpers", "--effects", str(effects), "--depth", "1",
                       "--format", "json")
    (row,) = json.loads(out)
    assert code == 0 and row["scenarios"] > 0 and (row["missing"], row["stuck"]) == (0, 0)
    time.sleep(2)  # past the moment every helper would have written
    assert not mark.exists(), f"a helper outlived its process and wrote {mark.read_text()!r}"


def _run_tracker_helpers(run: Run, mark: Path) -> None:
    """A loop on crashlab's own tracker, killed by the forked runner, that starts the same two helpers."""
    subprocess.Popen([sys.executable, "-c", f"import time; time.sleep(1.5); open({str(mark)!r}, 'a').write('p')"])
    if os.fork() == 0:
        time.sleep(1.5)
        mark.write_text("fork")
        os._exit(0)
    saved = run.directory / "done"
    if not saved.exists():
        run.tracker.create_issue("A", "One")
        crashlab.point("returned")
        saved.write_text("1")


HELPER_LOOP = str(ROOT / "tests" / "helper_loop.py")


@pytest.fixture
def two_issues(tmp_path: Path) -> Path:
    effects = tmp_path / "effects.yaml"
    effects.write_text("A: {issue: Login fails on Safari}\nB: {issue: Export times out}\n")
    return effects


def test_a_step_done_by_a_helper_in_a_session_of_its_own_counts_as_the_same_step_done_inline(cli, two_issues):
    """A death takes the helper with the process, as a machine's would: killed with its process group only,
    the helper finished its step after the death, and hid both duplicates (0 where the inline loop has 2)."""
    rows = {}
    for entry in ("inline", "helper"):
        code, out, err = cli("sweep", "--loop", f"{HELPER_LOOP}:{entry}", "--effects", str(two_issues), "--depth",
                             "1", "--format", "json")
        assert code == 0, err
        (row,) = json.loads(out)
        rows[entry] = {name: count for name, count in row.items() if name not in ("variant", "name")}
    assert rows["helper"] == rows["inline"]
    assert (rows["inline"]["dups"], rows["inline"]["flaky"]) == (2, 0)


def test_without_a_cgroup_a_helper_that_outlives_its_process_fails_its_scenario_named(cli, two_issues, monkeypatch):
    """Where no cgroup can be made, the process group is the boundary, said once; a helper in a session of its
    own leaves it, and is found alive after its process's death: the sweep fails, naming it, not flaky."""
    from crashlab.runners import group

    monkeypatch.setattr(group, "_own_cgroup", lambda: (None, "none here, for this test"))
    monkeypatch.setattr(group, "_parent", "")
    code, out, err = cli("sweep", "--loop", f"{HELPER_LOOP}:helper", "--effects", str(two_issues), "--depth", "1")
    assert (code, out) == (3, "")
    assert err.count("warning: no cgroup v2 of its own for each process (none here, for this test): a death kills "
                     "the process group") == 1
    last = err.strip().splitlines()[-1]
    # The first scenario whose helper is still alive when its process's death is checked: on a loaded machine a
    # helper may finish within the check of scenario 1, and the next scenario's is found instead.
    assert re.search(r"a process of scenario helper:\d+ outlived its death \(process 1's\): PID \d+", last), last
    assert f", command line '{sys.executable}" in last  # forked from the sweep, with its command line


def test_on_crashlabs_own_tracker_too_a_killed_process_takes_its_helpers(tmp_path):
    result = sweep(partial(_run_tracker_helpers, mark=tmp_path / "mark"), ["A"], depth=1)
    assert len(result.scenarios) == 2 and result.flaky == 0
    time.sleep(2)
    assert not (tmp_path / "mark").exists(), "a helper outlived its process"


def test_a_restart_that_hangs_is_killed_at_the_time_limit_and_counted_stuck(cli, loop):
    path, effects, mark = loop
    code, out, _ = cli("sweep", "--loop", f"{path}:hangs_on_restart", "--effects", str(effects), "--depth", "1",
                         "--time-limit", "0.5", "--format", "json")
    (row,) = json.loads(out)
    assert code == 0 and row["scenarios"] == row["stuck"] > 0
    assert gone(int(mark.read_text()))


def test_a_first_run_that_hangs_fails_the_sweep_in_one_line_and_leaves_nothing_running(cli, loop):
    path, effects, mark = loop
    code, out, err = cli("sweep", "--loop", f"{path}:hangs", "--effects", str(effects), "--time-limit", "0.5")
    assert (code, out) == (3, "")
    assert err.strip().endswith("process 1 failed: hung: it ran past its time limit of 0.5 s (--time-limit), and was "
                                "killed")
    assert len(err.strip().splitlines()) == 1
    assert gone(int(mark.read_text()))
    time.sleep(2)
    assert mark.read_text().isdigit(), "its helpers died with it"


@pytest.mark.parametrize("limit", ["0", "nan", "inf", "1e9", "-1"])
def test_a_time_limit_that_is_no_number_of_seconds_is_refused(cli, loop, limit):
    path, effects, _ = loop
    code, out, err = cli("sweep", "--loop", f"{path}:hangs", "--effects", str(effects), "--time-limit", limit)
    assert (code, out) == (2, "") and "is not a number of seconds from 0.1 to 86400" in err


def test_a_sweep_stopped_by_sigterm_leaves_no_process_of_the_loop_behind(loop):
    path, effects, mark = loop
    sweeping = subprocess.Popen([sys.executable, "-m", "crashlab", "sweep", "--loop", f"{path}:hangs", "--effects",
                                 str(effects)], cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 30
    while not (mark.exists() and mark.read_text().isdigit()) and time.monotonic() < deadline:
        time.sleep(0.05)
    hung = int(mark.read_text())
    sweeping.send_signal(signal.SIGTERM)
    assert sweeping.wait(10) != 0
    assert gone(hung)


def test_a_sweep_killed_while_a_process_stands_stopped_for_its_copy_takes_the_process_along():
    """Shared, a scenario's process stops itself at each point while the sweep copies its files. Were the sweep
    killed then, nothing would ever let that process go on or end it: the kernel must end it with the sweep."""
    sweeping = subprocess.Popen([sys.executable, "-m", "crashlab", "sweep", "--kill", "--variant", "keys", "--depth",
                                 "3", "--workers", "1"], cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline, stopped = time.monotonic() + 30, None
    while stopped is None and time.monotonic() < deadline:
        stopped = next((pid for pid in children(sweeping.pid) if state(pid) == "T"), None)
    sweeping.kill()
    sweeping.wait()
    assert stopped is not None, "no process of the sweep was seen stopped for its copy"
    deadline = time.monotonic() + 5
    while not gone(stopped) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert gone(stopped)


def children(parent: int) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        try:
            if entry.isdigit() and int(Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[1]) == parent:
                found.append(int(entry))
        except OSError:
            continue  # it ended while being looked at
    return found


def state(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return ""


@pytest.mark.slow
def test_what_a_thread_did_up_to_its_process_s_kill_is_in_the_trace(tmp_path):
    """A thread that searches the tracker over and over, counting each search in a file after the tracker
    answered it, beside a main thread that files the job's issues: at every kill, the file never counts
    more searches than the process told the harness. Each point is killed eight times. (Told in one last
    message before the kill, the trace left out what the thread did while it was written: at six or seven
    of the twelve points, in each of three runs of this test, up to 667 searches.)"""
    from crashlab.api import loop
    from crashlab.runners import RunnerSpec

    from .test_api import EFFECTS, example

    def counted(process: int) -> Path:
        return tmp_path / f"searches-{process}"

    def with_a_searching_thread(run: Run) -> None:
        stop = threading.Event()

        def searching() -> None:
            while not stop.is_set():
                run.tracker.search("Safari")
                with open(counted(run.process), "ab") as count:
                    count.write(b".")

        thread = threading.Thread(target=searching)
        thread.start()
        example.triage(run, keyed=True)
        stop.set()
        thread.join()

    setup = loop(with_a_searching_thread, EFFECTS, name="searching")
    with RunnerSpec("forked").open() as runner:
        points = len(runner.scenario(setup, ()).points.points(1))
        untold = {}
        for k in [k for k in range(1, points + 1) for _ in range(8)]:
            counted(1).unlink(missing_ok=True)
            run = runner.scenario(setup, (k,))
            told = sum(1 for e in run.points.events if e.process == 1 and e.kind == "request" and e.label == "search")
            if counted(1).exists() and counted(1).stat().st_size > told:
                untold[k] = untold.get(k, 0) + counted(1).stat().st_size - told
        assert points > 10 and not untold, f"searches made before the kill and not told, by kill point: {untold}"
