from pathlib import Path

import pytest

from crashlab.job import load_job

ROOT = Path(__file__).resolve().parent.parent
SCENARIOS = ROOT / "crashlab" / "jobs"


@pytest.fixture(scope="session")
def triage():
    return load_job(SCENARIOS / "triage.yaml")


@pytest.fixture
def cli(monkeypatch, capsys):
    """Run the real entry point as a user would; return (exit code, stdout, stderr)."""
    from crashlab.cli import main

    def run(*args: str) -> tuple[int, str, str]:
        monkeypatch.chdir(ROOT)
        monkeypatch.setattr("sys.argv", ["crashlab", *args])
        with pytest.raises(SystemExit) as exit_:
            main()
        out, err = capsys.readouterr()
        return exit_.value.code, out, err

    return run
