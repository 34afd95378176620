"""Parallel tool calls: the tracker under threads, and loops whose calls run on threads swept deterministically."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

from crashlab.engine.points import Recorder
from crashlab.job import Call
from crashlab.world.sqlite import Database, SqliteTracker


def test_the_sqlite_tracker_takes_requests_from_many_threads_at_once(tmp_path):
    """Eight threads file issues and repeat keyed ones on one tracker: each number once, each key one number.

    Before the tracker held a lock, a second thread's BEGIN inside the first's transaction failed
    (`cannot start a transaction within a transaction`)."""
    points = Recorder()
    points.start_process()
    with Database(tmp_path / "tracker.sqlite") as db:
        tracker = SqliteTracker(points, db, "keyed")

        def file(k: int) -> list[int]:
            call = Call(f"C{k}", "create_issue", {"title": f"issue {k}", "body": "b"})
            return [tracker.request(call, call.args, key=f"key-{k}") for _ in range(5)]

        with ThreadPoolExecutor(8) as pool:
            answers = list(pool.map(file, range(40)))
        assert all(len(set(numbers)) == 1 for numbers in answers)  # a keyed repeat is the first answer
        assert sorted(numbers[0] for numbers in answers) == list(range(1, 41))
        assert [r.number for r in tracker.records] == list(range(1, 41))
        assert len(tracker.keys()) == 40
