"""A service of yours in crashlab's place: the loop's tools write to your own database, and the sweep
resets it before each scenario and reads its records after, as a Jepsen client and checker would.

The loop imports nothing of crashlab's but `crashlab.point`, which marks where it can die: crashlab
cannot place a crash point inside a service it does not run.
"""

import os
import sqlite3
from pathlib import Path

import pytest

import crashlab
from crashlab.api import YourService, sweep
from crashlab.errors import BadInput

EFFECTS = {"A": {"issue": "Login fails"}, "B": {"issue": "Export times out"}}


class IssuesDatabase:
    """The user's own issue store: one SQLite file, its path told to the loop in ISSUES_DB."""

    def __init__(self, path: Path):
        self.path = path
        with sqlite3.connect(path) as db:
            db.execute("CREATE TABLE IF NOT EXISTS issues (number INTEGER PRIMARY KEY, title TEXT, key TEXT UNIQUE)")

    def env(self) -> dict[str, str]:
        return {"ISSUES_DB": str(self.path)}

    def reset(self) -> None:
        with sqlite3.connect(self.path) as db:
            db.execute("DELETE FROM issues")

    def records(self) -> list[dict]:
        with sqlite3.connect(self.path) as db:
            rows = db.execute("SELECT number, title FROM issues ORDER BY number").fetchall()
        return [{"kind": "issue", "number": number, "title": title, "body": ""} for number, title in rows]


def triage(keyed: bool = False) -> None:
    """File A and B in the user's database, saving progress in the run directory after each."""
    progress = Path(os.environ["CRASHLAB_RUN_DIR"]) / "done.txt"
    done = progress.read_text().split() if progress.exists() else []
    for step, title in (("A", "Login fails"), ("B", "Export times out")):
        if step in done:
            continue
        with sqlite3.connect(os.environ["ISSUES_DB"]) as db:
            db.execute("INSERT OR IGNORE INTO issues (title, key) VALUES (?, ?)",
                       (title, f"run-1:{step}" if keyed else None))
        crashlab.point("filed")
        progress.write_text(" ".join([*done, step]))
        done.append(step)
        crashlab.point("saved")


def keyed() -> None:
    triage(keyed=True)


def test_your_service_stands_in_for_crashlabs_and_is_read_after_every_scenario(tmp_path):
    plain = sweep(triage, EFFECTS, name="plain", depth=2, service=IssuesDatabase(tmp_path / "issues.sqlite"))
    assert plain.points == ["filed#1", "saved#1", "filed#2", "saved#2"]
    assert plain.dups > 0 and plain.missing == 0
    assert plain.failures()[0].startswith("A made twice when the process dies at `filed#1`")
    fixed = sweep(keyed, EFFECTS, name="keyed", depth=2, service=IssuesDatabase(tmp_path / "keyed.sqlite"))
    assert fixed.ok and fixed.row().scenarios == plain.row().scenarios


def unmarked() -> None:
    """Files A and B, and marks no crash point: against crashlab's service it would die at `accepted`."""
    with sqlite3.connect(os.environ["ISSUES_DB"]) as db:
        db.executemany("INSERT INTO issues (title) VALUES (?)", [("Login fails",), ("Export times out",)])


def test_an_empty_loop_or_one_with_no_crash_point_against_your_service_is_refused_not_passed(tmp_path):
    with pytest.raises(BadInput, match="it made A not at all; B not at all"):
        sweep(lambda: None, EFFECTS, service=IssuesDatabase(tmp_path / "issues.sqlite"), depth=1)
    with pytest.raises(BadInput, match="its uninterrupted run passes no crash point"):
        sweep(unmarked, EFFECTS, service=IssuesDatabase(tmp_path / "issues.sqlite"), depth=1)


def test_a_service_without_the_hooks_or_with_effect_names_is_refused(tmp_path):
    class Half:
        def reset(self) -> None: ...

    with pytest.raises(BadInput, match="Half lacks env\\(\\), reset\\(\\) or records\\(\\)"):
        sweep(triage, EFFECTS, service=Half(), depth=1)  # type: ignore[arg-type]
    with pytest.raises(BadInput, match="holds records, not effect names"):
        sweep(triage, ["A", "B"], service=IssuesDatabase(tmp_path / "issues.sqlite"), depth=1)
    with pytest.raises(BadInput, match="keeps its records where crashlab cannot copy them"):
        sweep(triage, EFFECTS, service=IssuesDatabase(tmp_path / "issues.sqlite"), state_in_run_dir=True, depth=1)
    assert isinstance(IssuesDatabase(tmp_path / "issues.sqlite"), YourService)
