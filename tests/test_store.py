"""Stores: a save is temp-then-rename, so a crash at `temp` leaves the old checkpoint durable."""

import pytest

from crashlab.checkpoint import FORMAT, Checkpoint, CheckpointError, TurnRecord
from crashlab.job import Call
from crashlab.points import Crash, Recorder
from crashlab.store import FileStore, MemoryStore

OLD = Checkpoint.new("run-1")
NEW = OLD.with_turn(TurnRecord.reply(1, (Call("A", "create_issue", {"title": "t", "body": "b"}),)))


def stores(tmp_path, points):
    return [MemoryStore(points), FileStore(tmp_path, points, fsync=False)]


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


def test_the_file_store_round_trips_every_field(tmp_path):
    checkpoint = (
        NEW.with_marker("A").with_decision("A", "rerun").with_result("A", 7).with_turn_closed().with_answer("done")
    )
    points = Recorder()
    points.start_process()
    store = FileStore(tmp_path, points, fsync=True)
    store.save(checkpoint)
    assert store.load() == checkpoint
    assert not store.temp.exists()


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ('{"format": 1, "run": "r", "tur', "corrupt or truncated"),
        ("", "corrupt or truncated"),
        ('{"run": "r"}', "no format version"),
        (f'{{"format": {FORMAT + 1}, "run": "r", "turns": [], "answer": null}}', "newer than this crashlab reads"),
        ('{"format": 1, "run": "r"}', "missing or mangles a field"),
    ],
)
def test_a_bad_checkpoint_file_is_refused_never_started_over(tmp_path, text, problem):
    store = FileStore(tmp_path, Recorder())
    store.path.write_text(text)
    with pytest.raises(CheckpointError, match=problem):
        store.load()
