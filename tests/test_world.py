"""The world outlives crashes: the tracker honours keys as its mode says, the person counts questions.

Every tracker test runs against both trackers, the in-memory one and the SQLite one: they are one
protocol, and a loop must not be able to tell them apart.
"""

import pytest

from crashlab.job import Call, load_job
from crashlab.protocols.points import Crash, Recorder
from crashlab.world import Fenced, NoSuchIssue, Person, Tracker, TrackerProtocol
from crashlab.world.sqlite import Database, SqliteTracker, WorldError, open_world

from .conftest import SCENARIOS

A = Call("A", "create_issue", {"title": "Login fails", "body": "blank page"})
B = Call("B", "create_issue", {"title": "Export times out", "body": "big CSV"})
C = Call("C", "comment", {"issue": "$A", "body": "same cookie bug"})


@pytest.fixture(params=["memory", "sqlite"])
def tracker(request, tmp_path):
    """A factory of fresh trackers of a mode, of the kind the test is parametrised with."""
    databases = []

    def make(mode: str) -> TrackerProtocol:
        points = Recorder()
        points.start_process()
        if request.param == "memory":
            return Tracker(points, mode)
        databases.append(Database(tmp_path / f"tracker-{len(databases)}.sqlite"))
        return SqliteTracker(points, databases[-1], mode)

    yield make
    for db in databases:
        db.close()


def test_a_keyed_repeat_returns_the_first_answer_and_changes_nothing(tracker):
    t = tracker("keyed")
    first = t.request(A, A.args, key="k1")
    again = t.request(A, A.args, key="k1")
    assert again == first
    assert len(t.records) == 1
    assert [e.detail["applied"] for e in t.points.events if e.kind == "request"] == [True, False]
    assert [e.label for e in t.points.events if e.kind == "point"] == ["accepted", "accepted"]


@pytest.mark.parametrize("mode", ["keyless", "lookup"])
def test_trackers_that_ignore_keys_apply_every_repeat(tracker, mode):
    t = tracker(mode)
    t.request(A, A.args, key="k1")
    t.request(A, A.args, key="k1")
    assert [r.number for r in t.made_by("A")] == [1, 2]


def test_a_request_without_a_key_is_always_applied(tracker):
    t = tracker("keyed")
    t.request(A, A.args)
    t.request(A, A.args)
    assert len(t.made_by("A")) == 2


def test_issues_and_comments_are_numbered_apart_from_one(tracker):
    t = tracker("keyed")
    assert t.request(A, A.args, key="ka") == 1
    assert t.request(C, {"issue": 1, "body": "same cookie bug"}, key="kc") == 1
    assert t.request(B, B.args, key="kb") == 2
    assert [(r.kind, r.number, r.call, r.key, r.issue) for r in t.records] == [
        ("issue", 1, "A", "ka", None), ("comment", 1, "C", "kc", 1), ("issue", 2, "B", "kb", None),
    ]
    assert t.records[0].text == "Login fails\nblank page" and t.records[1].text == "same cookie bug"


def test_a_comment_on_an_issue_the_tracker_does_not_hold_is_refused_and_makes_nothing(tracker):
    t = tracker("keyless")
    for issue in (1, 0, -1, True, "1"):
        with pytest.raises(NoSuchIssue, match="no issue"):
            t.request(C, {"issue": issue, "body": "b"})
    t.request(A, A.args)
    assert t.request(C, {"issue": 1, "body": "b"}) == 1
    assert [r.kind for r in t.records] == ["issue", "comment"]
    assert [e.kind for e in t.points.events if e.kind in ("refused", "request")] == ["refused"] * 5 + ["request"] * 2


def test_a_keyed_tracker_keeps_a_refusal_under_its_key_and_refuses_the_same_request_again(tracker):
    """So a comment a restart saw refused, left in flight by the process that died and landing late after the
    issue was made, cannot land: its saved refusal stays true."""
    t = tracker("keyed")
    with pytest.raises(NoSuchIssue):
        t.request(C, {"issue": 1, "body": "b"}, key="kc")
    t.request(A, A.args, key="ka")
    with pytest.raises(NoSuchIssue):
        t.request(C, {"issue": 1, "body": "b"}, key="kc")
    assert t.request(C, {"issue": 1, "body": "b"}, key="kc2") == 1
    assert t.lookup("kc") is None and t.lookup("kc2") == 1  # a refusal made nothing: no number to answer


def test_a_fencing_lookup_that_finds_a_refusal_fences_the_key_as_one_that_finds_nothing(tracker):
    """A fencing tracker honours no key, so only the fence stops the refused request's late arrival."""
    t = tracker("fencing")
    with pytest.raises(NoSuchIssue):
        t.request(C, {"issue": 1, "body": "b"}, key="kc")
    assert t.lookup("kc") is None and t.fenced() == {"kc"}
    t.request(A, A.args, key="ka")
    with pytest.raises(Fenced):
        t.request(C, {"issue": 1, "body": "b"}, key="kc")


def test_lookup_answers_what_a_key_returned_but_keyless_cannot_be_asked(tracker):
    t = tracker("lookup")
    number = t.request(A, A.args, key="k1")
    t.request(A, A.args, key="k1")  # applied again, but a lookup gives the first answer
    assert t.lookup("k1") == number == 1
    assert t.lookup("k2") is None
    assert [(e.kind, e.detail.get("answer")) for e in t.points.events if e.kind == "lookup"] == [
        ("lookup", 1), ("lookup", None),
    ]
    with pytest.raises(RuntimeError):
        tracker("keyless").lookup("k1")


def test_search_only_reads(tracker):
    t = tracker("keyed")
    t.request(A, A.args)
    assert t.search(Call("S", "search", {"query": "LOGIN"}), "LOGIN") == [1]
    assert len(t.records) == 1


def test_an_unknown_mode_is_refused_naming_the_valid_ones(tracker):
    with pytest.raises(ValueError, match="valid: keyed, keyless, lookup"):
        tracker("sometimes")


def test_the_person_answers_from_the_tracker_and_counts_each_question(tracker):
    t = tracker("keyless")
    person = Person(t.points, t)
    assert person.did_it_happen(A) is None
    t.request(A, A.args)
    assert person.did_it_happen(A) == 1
    assert person.asks == 2


# The SQLite world: what was committed is there for the next process, and nothing else is.


def open_triage(path, mode="keyed", crash_at=()):
    points = Recorder(crash_at)
    points.start_process()
    db = Database(path)
    return db, open_world(db, load_job(SCENARIOS / "triage.yaml"), points, mode)


def test_what_the_sqlite_world_committed_survives_closing_and_reopening(tmp_path):
    path = tmp_path / "tracker.sqlite"
    db, world = open_triage(path)
    world.tracker.request(A, A.args, key="ka")
    world.tracker.request(C, {"issue": 1, "body": "same cookie bug"}, key="kc")
    world.model.reply(1)
    world.person.did_it_happen(A)
    world.desk.approve(B, "kb")
    world.servers_died.add("B")
    db.close()

    db, world = open_triage(path)
    with db:
        assert [(r.kind, r.number, r.call) for r in world.tracker.records] == [("issue", 1, "A"), ("comment", 1, "C")]
        assert world.tracker.request(A, A.args, key="ka") == 1  # the key survived with its record
        assert world.tracker.lookup("kc") == 1
        assert (world.model.calls, world.person.asks, world.person.approvals) == (1, 1, 1)
        assert "B" in world.servers_died and "A" not in world.servers_died
        world.desk.approve(B, "kb")
        assert world.person.approvals == 1  # the decision was remembered: not asked again
        assert world.tracker.request(B, B.args, key="kb") == 2  # numbering goes on where it was


def test_a_new_process_finds_the_pending_approval_question(tmp_path):
    db, world = open_triage(tmp_path / "tracker.sqlite", crash_at=(1,))  # dies while the person decides
    with pytest.raises(Crash, match="approval-asked"):
        world.desk.approve(B, "kb")
    db.close()
    db, world = open_triage(tmp_path / "tracker.sqlite")
    with db:
        assert world.desk.approve(B, "kb") is True
        # The question was already pending, so the desk does not ask it (or hit approval-asked) again.
        assert [e.kind for e in world.desk.points.events] == ["approval", "point"]
        assert world.person.approvals == 1


def test_a_database_is_refused_for_another_job_or_tracker(tmp_path):
    path = tmp_path / "tracker.sqlite"
    open_triage(path, "keyless")[0].close()
    with pytest.raises(WorldError, match="was made for tracker 'keyless', not 'keyed'"):
        open_triage(path, "keyed")
    with Database(path) as db, pytest.raises(WorldError, match="was made for job 'triage', not 'approval'"):
        open_world(db, load_job(SCENARIOS / "approval.yaml"), Recorder(), "keyless")


def test_a_file_that_is_not_a_database_is_refused(tmp_path):
    path = tmp_path / "tracker.sqlite"
    path.write_text("not a database, just text " * 100)
    with pytest.raises(WorldError, match="not a crashlab tracker database"):
        Database(path)

