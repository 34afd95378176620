"""A loop that files each issue at most once, by an attempt marker kept where a restart reads it.

Before it sends a step it marks the step started, and a restart that finds a step started does not
send it again: it would rather lose an issue than file it twice, and a sweep must count each loss.
It sends each request with a key, and once it has marked the next step started it sends the last
step's request again to hear its number, which the service answers from the key, changing nothing:
so a death there leaves the tracker as the death at the last step's commit left it, and the run
directory the same but for the new marker. A state that leaves the marker out merges the two, and
the restart after the second death is counted as the first's, which sends what the second loses.

The marker is kept in one of the places a restart reads and a fingerprint may miss: an empty
directory ``A.started/`` (`in_directory`), a line of ``notes-journal`` beside a text file ``notes``
(`in_journal`), a file named ``lock`` (`in_lock`), the ``user_version`` of a SQLite database
(`in_user_version`), or the modification time of ``notes`` (`in_mtime`, which crashlab's content
leaves out: only the merge check sees it). It imports nothing of crashlab's: it finds the service and
its folder in the environment.
"""

from __future__ import annotations

import json
import os
import sqlite3
import urllib.request
from collections.abc import Callable
from pathlib import Path

STEPS = [("A", "Login fails on Safari"), ("B", "Export times out")]


def post(title: str, key: str) -> int:
    request = urllib.request.Request(os.environ["CRASHLAB_TRACKER_URL"] + "/issues",
                                     json.dumps({"title": title, "body": ""}).encode(),
                                     {"Content-Type": "application/json", "Idempotency-Key": key})
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.load(response)["number"]


def triage(started: Callable[[Path], int], start: Callable[[Path, int], None]) -> None:
    """File each step at most once; `started(run)` is how many steps were started, `start(run, k)` marks the
    k-th started."""
    run = Path(os.environ["CRASHLAB_RUN_DIR"])
    (run / "notes").write_text("triage of the login and export reports\n") if not (run / "notes").exists() else None
    for k, (step, title) in enumerate(STEPS, start=1):
        if started(run) >= k:
            continue  # started before: it may have been filed; never file it twice
        start(run, k)
        if k > 1:
            post(STEPS[k - 2][1], f"triage:{STEPS[k - 2][0]}")  # the last step again: its number, from its key
        post(title, f"triage:{step}")


def in_directory() -> None:
    triage(lambda run: sum((run / f"{step}.started").is_dir() for step, _ in STEPS),
           lambda run, k: (run / f"{STEPS[k - 1][0]}.started").mkdir())


def in_journal() -> None:
    def started(run: Path) -> int:
        journal = run / "notes-journal"
        return len(journal.read_text().splitlines()) if journal.exists() else 0

    def start(run: Path, k: int) -> None:
        with open(run / "notes-journal", "a") as journal:
            journal.write(f"started {STEPS[k - 1][0]}\n")

    triage(started, start)


def in_lock() -> None:
    """The marker in a file named ``lock``, the name of a file of `crashlab run`'s own."""
    def started(run: Path) -> int:
        return len((run / "lock").read_text().splitlines()) if (run / "lock").exists() else 0

    def start(run: Path, k: int) -> None:
        with open(run / "lock", "a") as lock:
            lock.write(f"started {STEPS[k - 1][0]}\n")

    triage(started, start)


def in_user_version() -> None:
    def database(run: Path) -> sqlite3.Connection:
        connection = sqlite3.connect(run / "progress.db", isolation_level=None)
        connection.execute("CREATE TABLE IF NOT EXISTS filed (step TEXT)")
        return connection

    def started(run: Path) -> int:
        with database(run) as connection:
            return connection.execute("PRAGMA user_version").fetchone()[0]

    def start(run: Path, k: int) -> None:
        with database(run) as connection:
            connection.execute(f"PRAGMA user_version = {k}")

    triage(started, start)


def in_mtime() -> None:
    def started(run: Path) -> int:
        when = (run / "notes").stat().st_mtime_ns
        return when if when <= len(STEPS) else 0  # a time of the 1970s' first nanoseconds: the marker; else none

    triage(started, lambda run, k: os.utime(run / "notes", ns=(k, k)))
