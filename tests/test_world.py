"""The world outlives crashes: the tracker honours keys as its mode says, the person counts questions."""

import pytest

from crashlab.job import Call
from crashlab.points import Recorder
from crashlab.world import Person, Tracker

A = Call("A", "create_issue", {"title": "Login fails", "body": "blank page"})


def tracker(mode):
    points = Recorder()
    points.start_process()
    return Tracker(points, mode)


def test_a_keyed_repeat_returns_the_first_answer_and_changes_nothing():
    t = tracker("keyed")
    first = t.request(A, A.args, key="k1")
    again = t.request(A, A.args, key="k1")
    assert again == first
    assert len(t.records) == 1
    assert [e.detail["applied"] for e in t.points.events if e.kind == "request"] == [True, False]
    assert [e.label for e in t.points.events if e.kind == "point"] == ["accepted", "accepted"]


@pytest.mark.parametrize("mode", ["keyless", "lookup"])
def test_trackers_that_ignore_keys_apply_every_repeat(mode):
    t = tracker(mode)
    t.request(A, A.args, key="k1")
    t.request(A, A.args, key="k1")
    assert [r.number for r in t.made_by("A")] == [1, 2]


def test_a_request_without_a_key_is_always_applied():
    t = tracker("keyed")
    t.request(A, A.args)
    t.request(A, A.args)
    assert len(t.made_by("A")) == 2


def test_lookup_answers_what_a_key_returned_but_keyless_cannot_be_asked():
    t = tracker("lookup")
    number = t.request(A, A.args, key="k1")
    assert t.lookup("k1") == number
    assert t.lookup("k2") is None
    with pytest.raises(RuntimeError):
        tracker("keyless").lookup("k1")


def test_search_only_reads():
    t = tracker("keyed")
    t.request(A, A.args)
    assert t.search(Call("S", "search", {"query": "LOGIN"}), "LOGIN") == [1]
    assert len(t.records) == 1


def test_the_person_answers_from_the_tracker_and_counts_each_question():
    t = tracker("keyless")
    person = Person(t.points, t)
    assert person.did_it_happen(A) is None
    t.request(A, A.args)
    assert person.did_it_happen(A) == 1
    assert person.asks == 2
