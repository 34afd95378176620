"""`crashlab run` through a power cut at every crash point: A, B and C made once each, every time.

`crashlab run --service URL` keeps its checkpoint in its run directory and makes its effects at the
service, another process, as a real tracker is another machine. Here the run directory sits on the
power-cut layer (`crashlab.durable.fuse`): the run is killed at crash point k (``--crash-at k``),
the power goes (the layer keeps only what was synced, directory entries included), and the same
command runs again on what is left. The service is not cut: its records are the world's.
"""

from __future__ import annotations

import signal
import subprocess
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from crashlab.durable.fuse import Layer, unusable
from crashlab.program import make

from .test_run import TRIAGE, against, crashlab

if TYPE_CHECKING:
    from crashlab.service.process import ServiceProcess

pytestmark = [pytest.mark.slow, pytest.mark.skipif(bool(unusable()), reason=f"FUSE is not usable here: {unusable()}")]

MADE = [("issue", 1), ("issue", 2), ("comment", 1)]
HOLDS = "issue #1 (A), issue #2 (B), comment #1 on #1 (C)"  # what the run says it made, finishing or finished


def run(run_dir: Path, service: ServiceProcess, *more: str) -> subprocess.CompletedProcess[str]:
    """`crashlab run` on the triage job, in a process of its own, as a user starts it."""
    return crashlab("run", TRIAGE, "--dir", str(run_dir), "--person", "auto", *against(service), *more)


def passed(stderr: str) -> int:
    return sum(1 for line in stderr.splitlines() if line.startswith("point "))


def test_crashlab_run_makes_each_effect_once_through_a_power_cut_at_every_crash_point(tmp_path):
    from crashlab.service.process import ServiceProcess

    with ServiceProcess.start(tmp_path / "service", "keyed", control=False) as service:
        whole = run(tmp_path / "whole", service)
        assert whole.returncode == 0, whole.stderr
        points = passed(whole.stderr)
        assert points > 30
        took_back = {}
        for k in range(1, points + 1):
            service.reset()
            backing = tmp_path / f"cut-at-{k}"
            backing.mkdir()
            with Layer.over(backing) as layer:
                run_dir = layer.mountpoint / "run"
                killed = run(run_dir, service, "--crash-at", str(k))
                assert killed.returncode == -signal.SIGKILL and passed(killed.stderr) == k, killed.stderr
                took_back[k] = layer.cut()
                resumed = run(run_dir, service)
                assert resumed.returncode == 0, f"cut at point {k}: {resumed.stderr}"
            made = [(r["kind"], r["number"]) for r in service.state()["records"]]
            assert made == MADE and HOLDS in resumed.stdout, f"cut at point {k}: {took_back[k]}: {resumed.stdout}"
        # Not vacuous: the cuts took back what the run had not synced, the checkpoint's temp file among it.
        temp = [k for k, lost in took_back.items() if any(line.startswith("run/checkpoint.json.tmp") for line in lost)]
        assert all(took_back.values()) and len(temp) > 5, took_back


def test_a_run_directory_is_made_durable_before_anything_is_saved_in_it(tmp_path):
    """Its name synced into its parent: a cut at once leaves it, where it takes back a directory only made."""
    with Layer.over(tmp_path) as layer:
        make(layer.mountpoint / "run")
        (layer.mountpoint / "only-made").mkdir()
        assert layer.cut() == []  # directories are not files: the cut tells files only
        assert (layer.mountpoint / "run").is_dir() and not (layer.mountpoint / "only-made").exists()
