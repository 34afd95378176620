"""Stores: a save is temp-then-rename, so a crash at `temp` leaves the old checkpoint durable."""

import json

import pytest

from crashlab.durable.checkpoint import FORMAT, Checkpoint, CheckpointError, TurnRecord
from crashlab.durable.store import FileStore, MemoryStore
from crashlab.job import Call
from crashlab.protocols.points import Crash, Recorder

OLD = Checkpoint.new("run-1")
NEW = OLD.with_turn(TurnRecord.reply(1, (Call("A", "create_issue", {"title": "t", "body": "b"}),)))


def stores(tmp_path, points):
    return [MemoryStore(points), FileStore(tmp_path, points, sync="none")]


@pytest.mark.parametrize("kind", [0, 1], ids=["memory", "files"])
def test_a_crash_at_temp_leaves_the_old_checkpoint(tmp_path, kind):
    points = Recorder(crash_at=[3])  # save OLD: temp, renamed; save NEW: temp <- crash
    points.start_process()
    store = stores(tmp_path, points)[kind]
    store.save(OLD)
    with pytest.raises(Crash) as crash:
        store.save(NEW)
    assert crash.value.label == "temp"
    assert store.load() == OLD


@pytest.mark.parametrize("kind", [0, 1], ids=["memory", "files"])
def test_a_crash_at_renamed_leaves_the_new_checkpoint(tmp_path, kind):
    points = Recorder(crash_at=[4])
    points.start_process()
    store = stores(tmp_path, points)[kind]
    store.save(OLD)
    with pytest.raises(Crash):
        store.save(NEW)
    assert store.load() == NEW


def test_an_empty_store_loads_nothing(tmp_path):
    assert FileStore(tmp_path, Recorder()).load() is None
    assert MemoryStore(Recorder()).load() is None


GATED = Call("B", "create_issue", {"title": "t", "body": "b"}, fails_after_accept=True, needs_approval=True)
SEARCH = Call("S", "search", {"query": "t"})
EVERY_FIELD = (
    NEW.with_marker("A", 0.0).with_decision("A", "rerun").with_result("A", 7).with_turn_closed()
    .with_turn(TurnRecord.reply(2, (GATED, SEARCH))).with_approval("B", False).with_result("B", "refused by the person")
    .with_result("S", [7]).with_marker("S", 25.5).with_decision("S", "lookup").with_turn_closed().with_answer("done")
)


@pytest.mark.parametrize("kind", [0, 1], ids=["memory", "files"])
def test_both_stores_round_trip_every_field(tmp_path, kind):
    points = Recorder()
    points.start_process()
    store = stores(tmp_path, points)[kind]
    store.save(EVERY_FIELD)
    assert store.load() == EVERY_FIELD
    loaded = store.load().turns[1]
    assert (loaded.calls[0].fails_after_accept, loaded.calls[0].needs_approval) == (True, True)
    assert (loaded.approvals, loaded.results["S"], loaded.decisions) == ({"B": False}, [7], {"S": "lookup"})


def test_the_file_store_leaves_no_temp_file(tmp_path):
    points = Recorder()
    points.start_process()
    store = FileStore(tmp_path, points, sync="full")
    store.save(EVERY_FIELD)
    assert store.load() == EVERY_FIELD and not store.temp.exists()


@pytest.mark.parametrize("kind", [0, 1], ids=["memory", "files"])
def test_the_store_keeps_what_was_saved_not_the_object_the_loop_holds(tmp_path, kind):
    points = Recorder()
    points.start_process()
    store = stores(tmp_path, points)[kind]
    held = NEW.with_result("A", 1)
    store.save(held)
    held.turns[0].results["A"] = 99  # the loop edits its own copy after the save
    assert store.load().turns[0].results == {"A": 1}


def with_field(path, value):
    """A valid checkpoint file with one field (a dotted path into its JSON) replaced."""
    data = json.loads(EVERY_FIELD.to_json())
    *parents, last = path.split(".")
    target = data
    for part in parents:
        target = target[int(part)] if part.isdigit() else target[part]
    if value is DELETE:
        del target[last]
    else:
        target[last] = value
    return json.dumps(data)


DELETE = object()


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ('{"format": 1, "run": "r", "tur', "corrupt or truncated"),
        ("", "corrupt or truncated"),
        ("\xff\xfe", "corrupt or truncated"),
        ("[]", "not a crashlab checkpoint"),
        ('{"run": "r"}', "no format version"),
        ('{"format": true, "run": "r", "turns": [], "answer": null}', r"no format version.*\$\.format"),
        (f'{{"format": {FORMAT + 1}, "run": "r", "turns": [], "answer": null}}', "newer than this crashlab reads"),
        ('{"format": 0, "run": "r", "turns": [], "answer": null}', "not one this crashlab wrote"),
        (f'{{"format": {FORMAT}, "run": "r"}}', "missing or mangles a field.*turns"),
        ('{"format": 1, "run": "r", "turns": [], "answer": null}', "format 1 is an older crashlab's.*carry no time"),
        (with_field("turns.0.markers", "AB"), r"mangles a field.*\$\.turns\[0\]\.markers"),
        (with_field("turns.0.results", []), r"mangles a field.*\$\.turns\[0\]\.results"),
        (with_field("turns.0.results", {"A": True}), r"mangles a field.*\$\.turns\[0\]\.results"),
        (with_field("turns.0.results", {"A": 0}), r"mangles a field.*\$\.turns\[0\]\.results"),
        (with_field("turns.0.decisions", {"A": "guess"}), r"mangles a field.*\$\.turns\[0\]\.decisions"),
        (with_field("turns.0.closed", "yes"), r"mangles a field.*\$\.turns\[0\]\.closed"),
        (with_field("turns.0.approvals", DELETE), "mangles a field.*approvals"),
        (with_field("turns.0.number", 2), r"inconsistent.*turns\[0\]\.number is 2, expected 1"),
        (with_field("turns.0.closed", False), r"inconsistent.*turns\[0\] is open but is not the last turn"),
        (with_field("turns.1.closed", False), "inconsistent.*finished but its last turn is open"),
        (with_field("turns.0.results", {"Z": 1}), "inconsistent.*results names 'Z'"),
        (with_field("turns.0.markers", ["A"]), r"mangles a field.*\$\.turns\[0\]\.markers"),
        (with_field("turns.0.markers", {"A": -1}), r"mangles a field.*\$\.turns\[0\]\.markers"),
        (with_field("turns.1.markers", {"A": 0}), "inconsistent.*markers names 'A'"),
        (with_field("surprise", 1), "mangles a field.*surprise"),
    ],
)
def test_a_bad_checkpoint_file_is_refused_never_started_over(tmp_path, text, problem):
    store = FileStore(tmp_path, Recorder())
    store.path.write_text(text, encoding="latin-1")
    with pytest.raises(CheckpointError, match=problem):
        store.load()
