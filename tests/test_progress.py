"""Progress on long work goes to stderr only: a bar on a terminal, a line every few seconds in a log, nothing for
work that ends within a second, and never a byte of it in what a script reads on stdout."""

from __future__ import annotations

import io
import json
import os
import pty
import select
import subprocess
import sys

import pytest

from crashlab.cli.progress import EVERY, Lines, said, size

from .conftest import ROOT


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_work_that_ends_within_the_interval_says_nothing():
    clock, log = Clock(), io.StringIO()
    lines = Lines("sweep", "scenarios", log, clock)
    lines.expect(1000)
    for _ in range(10):
        clock.now += EVERY / 20
        lines.advance(50)
    lines.close()
    assert log.getvalue() == ""


def test_long_work_in_a_log_says_how_far_it_is_every_interval_and_how_it_ended():
    clock, log = Clock(), io.StringIO()
    lines = Lines("sweep", "scenarios", log, clock)
    lines.expect(3000)
    for _ in range(30):
        clock.now += EVERY / 4
        lines.advance(100)
    lines.close()
    said_lines = log.getvalue().splitlines()
    assert len(said_lines) == 7 + 1  # one every four advances, then the end
    assert said_lines[0] == "crashlab: sweep: 400 of about 3,000 scenarios, 10 s in, about 65 s left"
    assert said_lines[-1] == "crashlab: sweep: 3,000 scenarios in 75 s"


def test_a_count_past_the_estimate_is_said_as_the_count_not_a_fraction_over_one():
    assert said(5000, 3000, "scenarios", 20) == "5,000 of about 5,000 scenarios, 20 s in, about 0 s left"
    assert said(12, None, "jobs", 3) == "12 jobs, 3 s in"


def test_a_terminal_nobody_sized_is_taken_as_80_by_24(tmp_path):
    main, other = pty.openpty()
    try:
        with os.fdopen(os.dup(other), "w") as terminal:
            assert size(terminal) == (80, 24)
        with (tmp_path / "log").open("w") as log:
            assert size(log) == (80, 24)
    finally:
        os.close(main)
        os.close(other)


def under_a_terminal(*args: str) -> tuple[bytes, bytes, int]:
    """Run crashlab with its stderr on a pseudo-terminal (as nobody sized it) and its stdout on a pipe."""
    main, other = pty.openpty()
    process = subprocess.Popen([sys.executable, "-m", "crashlab", *args], stdin=subprocess.DEVNULL,
                               stdout=subprocess.PIPE, stderr=other, cwd=ROOT)
    os.close(other)
    shown = b""
    while True:
        ready, _, _ = select.select([main], [], [], 0.1)
        if ready:
            try:
                chunk = os.read(main, 65536)
            except OSError:  # the terminal's other end closed with the process
                break
            if not chunk:
                break
            shown += chunk
        elif process.poll() is not None:
            break
    os.close(main)
    out = process.stdout.read() if process.stdout else b""
    return shown, out, process.wait()


@pytest.mark.slow
def test_a_sweep_of_seconds_on_a_terminal_draws_its_bar_and_its_json_stays_clean():
    shown, out, code = under_a_terminal("sweep", "--kill", "--variant", "all", "--workers", "2", "--format", "json")
    assert code == 0
    frames = shown.decode().split("\r")
    assert any(frame.startswith("sweep:") and " of " not in frame and "/" in frame and "scenarios/s" in frame
               for frame in frames), shown[:400]
    assert sum(row["scenarios"] for row in json.loads(out)) == 3715


def test_a_sweep_on_a_terminal_that_ends_within_a_second_draws_nothing():
    shown, out, code = under_a_terminal("sweep", "--variant", "after-reply", "--depth", "1", "--format", "json")
    assert (code, shown) == (0, b"")
    assert json.loads(out)[0]["variant"] == "after-reply"
