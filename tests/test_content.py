"""A run directory's content is what a restart reads in it: equal content, one state; any other difference, two.

Prefix sharing restarts once per distinct state, so this is where it is decided which deaths leave the
same state. Too fine, and sharing buys nothing (a runtime's states all differ in bytes); too coarse,
and a restart from one state is counted for a death that left another. Each test below has both
halves: what must count as equal, and a near miss that must not.
"""

import shutil
import sqlite3
from pathlib import Path

from crashlab.durable.content import ISO_TIME, UUID, content
from crashlab.runners.forked import every_file

SCHEMA = "CREATE TABLE steps (id TEXT, output TEXT, started REAL)"


def database(at: Path, rows, journal="wal", vacuum=False) -> Path:
    at.mkdir(parents=True, exist_ok=True)
    connection = sqlite3.connect(at / "db.sqlite", isolation_level=None)
    connection.execute(f"PRAGMA journal_mode={journal}")
    connection.execute("PRAGMA synchronous = OFF")  # what is durable is not the question here; fsync is slow
    connection.execute(SCHEMA)
    connection.executemany("INSERT INTO steps VALUES (?, ?, ?)", rows)
    if vacuum:
        connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    return at, connection


def files(at: Path, connection=None):
    if connection is not None:
        connection.close()
    return every_file(at)


def test_a_database_is_its_rows_not_its_pages_nor_its_wal(tmp_path):
    rows = [("A", "1", 0.5), ("B", "2", 0.7)]
    in_wal = every_file(database(tmp_path / "wal", rows)[0])  # still open: the rows are in the WAL
    checkpointed = files(*database(tmp_path / "main", rows, vacuum=True))
    assert {name for name, _ in in_wal} >= {"db.sqlite", "db.sqlite-wal"}
    assert in_wal != checkpointed and content(in_wal) == content(checkpointed)
    assert content(in_wal) != content(files(*database(tmp_path / "other", [("A", "1", 0.5), ("B", "3", 0.7)])))


def test_frames_no_commit_ended_are_not_content(tmp_path):
    at, connection = database(tmp_path / "db", [("A", "1", 0.5)])
    wal, committed = len(dict(every_file(at))["db.sqlite-wal"]), content(every_file(at))
    connection.execute("PRAGMA cache_size = 1")  # spill the transaction's pages into the WAL before it commits
    connection.execute("BEGIN")
    connection.executemany("INSERT INTO steps VALUES (?, ?, 0)", [("B", f"{n:0100}") for n in range(1000)])
    mid = every_file(at)
    assert len(dict(mid)["db.sqlite-wal"]) > wal and content(mid) == committed  # frames, but no commit frame
    connection.execute("COMMIT")
    assert content(every_file(at)) != committed


def test_a_hot_journal_is_rolled_back_as_the_restart_would(tmp_path):
    at, connection = database(tmp_path / "db", [("A", f"{n:0100}", n) for n in range(1000)], journal="delete")
    before = content(every_file(at))
    connection.execute("PRAGMA cache_size = 1")  # spill the transaction's pages into the file before it commits
    connection.execute("BEGIN")
    connection.execute("UPDATE steps SET output = 'torn' || output")
    torn = every_file(at)
    assert "db.sqlite-journal" in dict(torn)
    assert content(torn) == before
    assert content([(n, d) for n, d in torn if n != "db.sqlite-journal"]) != before  # the journal is what undoes it
    connection.execute("ROLLBACK")


def test_rows_inserted_in_another_order_are_another_state(tmp_path):
    one = files(*database(tmp_path / "one", [("A", "1", 0), ("B", "2", 0)]))
    other = files(*database(tmp_path / "other", [("B", "2", 0), ("A", "1", 0)]))
    assert content(one) != content(other)  # a query may read them in rowid order


def test_volatile_columns_are_left_out_and_no_other(tmp_path):
    volatile = frozenset({("steps", "started")})
    one = files(*database(tmp_path / "one", [("A", "1", 0.5)]))
    later = files(*database(tmp_path / "later", [("A", "1", 9.25)]))
    other = files(*database(tmp_path / "other", [("A", "2", 0.5)]))
    assert content(one) != content(later) and content(one, volatile) == content(later, volatile)
    assert content(one, volatile) != content(other, volatile)
    assert content(one, frozenset({("elsewhere", "started")})) != content(later, frozenset({("elsewhere", "started")}))


def test_minted_values_are_renamed_by_first_appearance_keeping_which_are_equal(tmp_path):
    minted = UUID + b"|" + ISO_TIME
    a, b, c = "1f1f0e42-c0b8-6494-bfff-2a0974a210c3", "d1a46c10-1983-4239-af34-231a72fe29bf", \
        "01a247bb-d0cc-70f5-b14c-b8679ae1cc5c"
    first = files(*database(tmp_path / "1", [(a, "2026-12-05T19:43:40.735802+00:00", 0), (b, a, 0)]))
    second = files(*database(tmp_path / "2", [(c, "2026-12-06T01:02:03.000001+00:00", 0), (b, c, 0)]))
    tangled = files(*database(tmp_path / "3", [(c, "2026-12-06T01:02:03.000001+00:00", 0), (b, b, 0)]))
    assert content(first) != content(second) and content(first, minted=minted) == content(second, minted=minted)
    assert content(first, minted=minted) != content(tangled, minted=minted)  # the second row names the first's ID


def test_shared_memory_is_no_state_and_other_files_are_their_bytes(tmp_path):
    at, connection = database(tmp_path / "db", [("A", "1", 0.5)])
    (at / "notes.json").write_text('{"step": 1}')
    (at / "sub").mkdir()
    (at / "sub" / "result.pickle").write_bytes(b"\x80\x04K\x01.")
    found = dict(content(every_file(at)))
    assert "db.sqlite-shm" in dict(every_file(at)) and set(found) == {"db.sqlite", "notes.json", "sub/result.pickle"}
    assert found["notes.json"] == b'{"step": 1}'
    connection.close()


def test_a_database_no_restart_could_open_is_still_a_state_and_not_an_error(tmp_path):
    at, connection = database(tmp_path / "db", [("A", "1", 0.5)], journal="delete")
    connection.close()
    torn = (at / "db.sqlite").read_bytes()[:100] + b"\xff" * 3996
    broken = content([("db.sqlite", torn)])
    assert broken != content(every_file(at)) and broken == content([("db.sqlite", torn)])
    shutil.rmtree(at)


def test_a_dropped_value_is_left_out_and_a_kept_part_stays_beside_its_new_name(tmp_path):
    """A value whose presence is a race (`drop`) counts for nothing; the step of a channel version (`keep`) counts,
    its random part does not."""
    minted = rb"(?P<drop>id=[0-9a-f]{4};)|(?P<keep>v[0-9]+\.)[0-9]{2,4}"
    assert content([("f", b"x id=beef;v1.123 v2.45")], minted=minted) == \
        content([("f", b"x v1.9876 v2.01")], minted=minted)
    assert content([("f", b"x v1.9876 v2.01")], minted=minted) != content([("f", b"x v1.9876 v3.01")], minted=minted)
    assert content([("f", b"v1.11 v1.11")], minted=minted) != content([("f", b"v1.11 v1.22")], minted=minted)
