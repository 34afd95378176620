"""A run directory's content is what a restart reads in it: equal content, one state; any other difference, two.

Prefix sharing restarts once per distinct state, so this is where it is decided which deaths leave the
same state. Too fine, and sharing buys nothing (a runtime's states all differ in bytes); too coarse,
and a restart from one state is counted for a death that left another. Each test below has both
halves: what must count as equal, and a near miss that must not.
"""

import os
import shutil
import sqlite3
import stat
from pathlib import Path

from crashlab.durable.content import ISO_TIME, UUID, content
from crashlab.durable.directory import put
from crashlab.durable.directory import taken as every_file

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


def file(name, data, mode=0o644):
    """An entry of a regular file, as `taken` gives it."""
    return name, stat.S_IFREG | mode, data, 0


def by_name(entries):
    return {name: data for name, _, data, _ in entries}


def test_a_database_is_its_rows_not_its_pages_nor_its_wal(tmp_path):
    rows = [("A", "1", 0.5), ("B", "2", 0.7)]
    in_wal = every_file(database(tmp_path / "wal", rows)[0])  # still open: the rows are in the WAL
    checkpointed = files(*database(tmp_path / "main", rows, vacuum=True))
    assert set(by_name(in_wal)) >= {"db.sqlite", "db.sqlite-wal"}
    assert in_wal != checkpointed and content(in_wal) == content(checkpointed)
    assert content(in_wal) != content(files(*database(tmp_path / "other", [("A", "1", 0.5), ("B", "3", 0.7)])))


def test_frames_no_commit_ended_are_not_content(tmp_path):
    at, connection = database(tmp_path / "db", [("A", "1", 0.5)])
    wal, committed = len(by_name(every_file(at))["db.sqlite-wal"]), content(every_file(at))
    connection.execute("PRAGMA cache_size = 1")  # spill the transaction's pages into the WAL before it commits
    connection.execute("BEGIN")
    connection.executemany("INSERT INTO steps VALUES (?, ?, 0)", [("B", f"{n:0100}") for n in range(1000)])
    mid = every_file(at)
    assert len(by_name(mid)["db.sqlite-wal"]) > wal and content(mid) == committed  # frames, but no commit frame
    connection.execute("COMMIT")
    assert content(every_file(at)) != committed


def test_a_hot_journal_is_rolled_back_as_the_restart_would(tmp_path):
    at, connection = database(tmp_path / "db", [("A", f"{n:0100}", n) for n in range(1000)], journal="delete")
    before = content(every_file(at))
    connection.execute("PRAGMA cache_size = 1")  # spill the transaction's pages into the file before it commits
    connection.execute("BEGIN")
    connection.execute("UPDATE steps SET output = 'torn' || output")
    torn = every_file(at)
    assert "db.sqlite-journal" in by_name(torn)
    assert content(torn) == before
    assert content([e for e in torn if e[0] != "db.sqlite-journal"]) != before  # the journal is what undoes it
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
    found = {name: data for name, _, data in content(every_file(at))}
    assert "db.sqlite-shm" in by_name(every_file(at))
    assert set(found) == {".", "db.sqlite", "notes.json", "sub", "sub/result.pickle"}
    assert found["notes.json"] == b'{"step": 1}'
    connection.close()


def test_a_database_no_restart_could_open_is_still_a_state_and_not_an_error(tmp_path):
    at, connection = database(tmp_path / "db", [("A", "1", 0.5)], journal="delete")
    connection.close()
    torn = (at / "db.sqlite").read_bytes()[:100] + b"\xff" * 3996
    broken = content([file("db.sqlite", torn)])
    assert broken != content(every_file(at)) and broken == content([file("db.sqlite", torn)])
    shutil.rmtree(at)


def test_a_dropped_value_is_left_out_and_a_kept_part_stays_beside_its_new_name(tmp_path):
    """A value whose presence is a race (`drop`) counts for nothing; the step of a channel version (`keep`) counts,
    its random part does not."""
    minted = rb"(?P<drop>id=[0-9a-f]{4};)|(?P<keep>v[0-9]+\.)[0-9]{2,4}"
    assert content([file("f", b"x id=beef;v1.123 v2.45")], minted=minted) == \
        content([file("f", b"x v1.9876 v2.01")], minted=minted)
    assert content([file("f", b"x v1.9876 v2.01")], minted=minted) != content([file("f", b"x v1.9876 v3.01")], minted=minted)
    assert content([file("f", b"v1.11 v1.11")], minted=minted) != content([file("f", b"v1.11 v1.22")], minted=minted)


def test_an_empty_directory_a_mode_and_a_symlink_are_what_a_restart_reads(tmp_path):
    """A loop may keep a marker in an empty directory, a file's mode, a symlink: each is a state of its own."""
    (tmp_path / "notes").write_text("n")
    plain = content(every_file(tmp_path))
    (tmp_path / "A.started").mkdir()
    started = content(every_file(tmp_path))
    (tmp_path / "notes").chmod(0o600)
    private = content(every_file(tmp_path))
    (tmp_path / "latest").symlink_to("notes")
    linked = content(every_file(tmp_path))
    (tmp_path / "latest").unlink()
    (tmp_path / "latest").symlink_to("A.started")
    relinked = content(every_file(tmp_path))
    assert len({plain, started, private, linked, relinked}) == 5
    (tmp_path / "latest").unlink()
    (tmp_path / "latest").symlink_to("notes")
    assert content(every_file(tmp_path)) == linked  # a symlink is its target, not when it was made


def test_a_journal_beside_a_file_that_is_no_database_is_a_file_of_its_own(tmp_path):
    (tmp_path / "notes").write_text("plain text, not SQLite")
    without = content(every_file(tmp_path))
    for suffix in ("-journal", "-wal", "-shm"):
        (tmp_path / f"notes{suffix}").write_text("started A")
        assert content(every_file(tmp_path)) != without
        (tmp_path / f"notes{suffix}").unlink()


def test_a_database_is_known_by_its_header_not_its_name(tmp_path):
    rows = [("A", "1", 0.5)]
    for name in ("state.bin", "db"):
        at, connection = database(tmp_path / name, rows, journal="delete")
        connection.close()
        (at / "db.sqlite").rename(at / name)
    one, other = (content(every_file(tmp_path / name)) for name in ("state.bin", "db"))
    assert [entry[2] for entry in one] == [entry[2] for entry in other]  # dumped alike: equal but for the name
    assert b"SQLite format 3" not in one[1][2]  # a dump, not the file's pages


def test_a_database_s_header_fields_and_every_schema_object_are_its_content(tmp_path):
    """`user_version`, `application_id`, a trigger, a view, an index: a restart reads each; none is a row."""
    changes = ["PRAGMA user_version = 7", "PRAGMA application_id = 42",
               "CREATE TRIGGER t AFTER INSERT ON steps BEGIN SELECT 1; END",
               "CREATE VIEW v AS SELECT id FROM steps", "CREATE INDEX i ON steps (id)"]
    seen = set()
    for k, change in enumerate([None, *changes]):
        at, connection = database(tmp_path / str(k), [("A", "1", 0.5)])
        if change:
            connection.execute(change)
        seen.add(content(files(at, connection)))
    assert len(seen) == len(changes) + 1
    at, connection = database(tmp_path / "again", [("A", "1", 0.5)])
    connection.execute("PRAGMA user_version = 7")
    assert content(files(at, connection)) in seen  # equal when equal


def test_a_directory_put_back_is_the_directory_taken(tmp_path):
    """The copy a restart starts from: every entry with its kind, mode, bytes and time."""
    made = tmp_path / "made"
    (made / "A.started").mkdir(parents=True)
    (made / "sub").mkdir(mode=0o500)
    (made / "notes").write_bytes(b"\x00\x01")
    (made / "notes").chmod(0o640)
    (made / "latest").symlink_to("/nowhere/at/all")
    os.mkfifo(made / "pipe")
    entries = every_file(made)
    (tmp_path / "copy").mkdir()
    put(tmp_path / "copy", entries)
    assert every_file(tmp_path / "copy") == entries
