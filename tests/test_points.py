"""The recorder counts points per process and crashes each process at its chosen point."""

import pytest

from crashlab.protocols.points import Crash, Recorder


def test_each_process_crashes_at_its_own_index_and_the_last_runs_free():
    points = Recorder(crash_at=[2, 1])
    points.start_process()
    points.hit("temp")
    with pytest.raises(Crash) as crash:
        points.hit("renamed")
    assert (crash.value.label, crash.value.index) == ("renamed", 2)
    points.start_process()
    with pytest.raises(Crash):
        points.hit("temp")
    points.start_process()
    for _ in range(10):
        points.hit("reply")
    assert [len(points.points(p)) for p in (1, 2, 3)] == [2, 1, 10]
    assert [(e.process, e.label) for e in points.crashes()] == [(1, "renamed"), (2, "temp")]


def test_events_are_placed_where_the_loop_says_it_is():
    from crashlab.job import Call

    points = Recorder()
    points.start_process()
    points.at(2, Call("C", "comment", {}))
    points.hit("accepted")
    points.note("ask", question="?")
    assert [str(e.where) for e in points.events] == ["turn 2 call C (comment)"] * 2
