import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

from crashlab.job import load_job

ROOT = Path(__file__).resolve().parent.parent

# Property tests draw a few jobs on a developer's machine and many in CI, where time is cheaper.
settings.register_profile("dev", max_examples=5, deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("ci", max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci" if os.environ.get("CI") else "dev"))
SCENARIOS = ROOT / "scenarios"


@pytest.fixture(scope="session")
def triage():
    return load_job(SCENARIOS / "triage.yaml")


@pytest.fixture
def cli(monkeypatch, capsys):
    """Run the real entry point as a user would; return (exit code, stdout, stderr)."""
    from crashlab.cli import main

    def run(*args: str) -> tuple[int, str, str]:
        monkeypatch.chdir(ROOT)
        # A loaded machine makes a sweep last past the interval of a progress line; what a test reads on stderr
        # must not depend on that (tests/test_progress.py holds the lines to their own clock).
        monkeypatch.setattr("crashlab.cli.progress.EVERY", float("inf"))
        monkeypatch.setattr("sys.argv", ["crashlab", *args])
        with pytest.raises(SystemExit) as exit_:
            main()
        out, err = capsys.readouterr()
        return exit_.value.code, out, err

    return run
