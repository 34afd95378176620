"""Real processes, really killed: wherever SIGKILL lands, running again finishes with every effect once.

Each test starts `crashlab run` as its own OS process. `--crash-at N` makes it SIGKILL itself at its
N-th crash point, for every N the job has; the last test kills it from outside at random moments.
No Python object survives a death: the next process has only the run directory.
"""

import json
import random
import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from crashlab.job import load_job

from .conftest import ROOT, SCENARIOS
from .helpers import scenario
from .test_run import calls, crashlab

pytestmark = pytest.mark.slow


def finish(run_dir, job_file, *extra, limit=5):
    """Run the job again until a process finishes it; return the tracker's records."""
    for _ in range(limit):
        done = crashlab("run", job_file, "--dir", run_dir, "--person", "auto", *extra)
        if done.returncode == 0:
            return json.loads(crashlab("tracker", "show", run_dir, "--format", "json").stdout)
        assert done.returncode == -signal.SIGKILL, done.stderr
    raise AssertionError(f"{run_dir}: not finished after {limit} runs")


@pytest.mark.parametrize("name", ["triage", "approval", "server-dies"])
def test_a_kill_at_every_crash_point_leaves_every_effect_exactly_once(tmp_path, name):
    job_file = str(SCENARIOS / f"{name}.yaml")
    sweep_labels = [e.label for e in scenario("agent-keyed", load_job(job_file), ()).points.points(1)]

    whole = crashlab("run", job_file, "--dir", str(tmp_path / "whole"), "--person", "auto")
    assert [line.split()[2] for line in whole.stderr.splitlines() if line.startswith("point ")] == sweep_labels

    def kill_then_finish(n: int):
        run_dir = str(tmp_path / f"kill-{n}")
        killed = crashlab("run", job_file, "--dir", run_dir, "--person", "auto", "--crash-at", str(n))
        assert killed.returncode == -signal.SIGKILL, (n, killed.stderr)
        assert killed.stderr.splitlines()[-1].startswith(f"point {n} {sweep_labels[n - 1]}  ")
        return calls(finish(run_dir, job_file))

    with ThreadPoolExecutor(max_workers=2) as pool:
        points = range(1, len(sweep_labels) + 1)
        outcomes = dict(zip(points, pool.map(kill_then_finish, points), strict=True))
    assert {n: held for n, held in outcomes.items() if held != ["A", "B", "C"]} == {}


def test_kills_at_random_moments_leave_every_effect_exactly_once(tmp_path):
    """kill -9 from outside, at a random instant of a paced run, again and again, then let it finish."""
    rng, run_dir, job_file = random.Random(11), str(tmp_path / "run"), str(SCENARIOS / "triage.yaml")
    deaths, points_passed = 0, 0
    for _ in range(30):
        process = subprocess.Popen(
            [sys.executable, "-m", "crashlab", "run", job_file, "--dir", run_dir, "--person", "auto", "--pace", "0.05"],
            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )
        time.sleep(rng.uniform(0.3, 1.2))
        process.send_signal(signal.SIGKILL)
        _, err = process.communicate(timeout=30)
        if process.returncode == 0:
            break
        deaths += 1
        points_passed += sum(line.startswith("point ") for line in err.splitlines())
    held = finish(run_dir, job_file)
    assert calls(held) == ["A", "B", "C"] and not any(r["duplicate"] for r in held)
    assert deaths >= 3 and points_passed >= 20  # the kills really landed inside runs, many times
