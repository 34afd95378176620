"""A run directory as a value: what a restart will read in it, not how its bytes are laid out.

Two deaths can leave the same durable state in different bytes. A SQLite database's pages move as it
grows and frees them, its WAL holds frames that no commit ended (a restart ignores them) or that the
main file already holds, and its ``-shm`` index is rebuilt by whoever opens it next. Prefix sharing
restarts once per distinct state, so a fingerprint of bytes splits one state into many and buys
nothing from them. A database (a file that begins with SQLite's header, whatever its name) is taken
here as a restart opens it: copied with its WAL and its hot journal (which opening replays or rolls
back), then read as a restart can read it: the header fields it keeps for its user and its settings
(``user_version``, ``application_id``, the schema format, the page size, the encoding, the journal
and vacuum modes), every schema object (tables, indexes, triggers, views) and each table's rows, in a
canonical order. Its counters (of changes, of schema changes) and its layout (its pages, its free
list) are left out: they tell how the state was reached, not what it is. Every other entry of the
directory is itself (`crashlab.durable.directory`): a directory (an empty one too) by its mode, a
symlink by its target, a file by its mode and bytes, a ``-journal`` or ``-wal`` file beside a file
that is no database too. Modification times are not content: they differ in every run.

A runtime also stamps its rows with clocks and random IDs. Those it never acts on (when a step started,
the ID of the process that ran it) it names as `Volatile` columns, left out. Those it does act on, but
only by equality and by the order it made them in (LangGraph's checkpoint and message IDs, inside its
serialized checkpoints), it names by a pattern, `Minted`: each value is renamed by where it first
appears, the rows in the order they were inserted, so two states that differ only in what each process
happened to draw count as one. Nothing else is left out. Neither is argued but checked: a shared sweep
restarts once from one of the states that are equal but for them, and must agree with the re-executed
sweep, scenario by scenario and in every column (``same_sweep`` in the slow suite); and before it shares, it restarts
from two states it counts as one and checks that they do the same (`crashlab.engine.merges`).
"""

from __future__ import annotations

import re
import sqlite3
import stat
import tempfile
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import msgspec

from crashlab.durable.directory import Entry

#: Columns left out of a database's content, as (table, column): ``{("workflow_status", "created_at"), ...}``.
Volatile = frozenset[tuple[str, str]]
#: A pattern of the values a process mints afresh and acts on only by equality and order: renamed, not left out.
Minted = bytes

#: Building blocks of `Minted` patterns: a UUID in its text form, and a UTC time in ISO 8601 to the microsecond.
UUID = rb"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
ISO_TIME = rb"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{6}(?:\+00:00|Z)"

HEADER = b"SQLite format 3\x00"
#: Files SQLite keeps beside a database, by suffix: the WAL and a hot rollback journal hold durable state
#: (opening the database replays or rolls them back); the shared-memory index holds none.
BESIDE = ("-wal", "-journal")
IGNORED = ("-shm",)
#: The fields of a database's header that a restart can read and that say what the database is, by name and
#: (offset, size) (https://sqlite.org/fileformat.html#the_database_header): not its counters nor its layout.
HEADER_FIELDS = {"page size": (16, 2), "write version": (18, 1), "read version": (19, 1), "reserved": (20, 1),
                 "schema format": (44, 4), "cache size": (48, 4), "encoding": (56, 4), "user_version": (60, 4),
                 "incremental vacuum": (64, 4), "application_id": (68, 4)}
AUTO_VACUUM = (52, 4)  # a page number where auto-vacuum is on, 0 where it is off: only whether it is 0 is kept

#: A directory's content: each entry's path, mode (kind and permissions) and what a restart reads in it.
Content = tuple[tuple[str, int, bytes], ...]

_encoder = msgspec.msgpack.Encoder()


def content(entries: Iterable[Entry], volatile: Volatile = frozenset(), minted: Minted = b"") -> Content:
    """Each entry's content, by path: a database's as its dump (with its WAL and journal in it), a symlink's its
    target, a directory's nothing but its mode, another file's its bytes; in a file, each `minted` value renamed
    by where it first appears in it."""
    kept = {name: (mode, data) for name, mode, data, _ in entries}
    files = {name: data for name, (mode, data) in kept.items() if stat.S_ISREG(mode)}
    databases = {name for name, data in files.items() if data.startswith(HEADER)}
    out = []
    for name, (mode, data) in sorted(kept.items()):
        if any(name.endswith(suffix) and name[:-len(suffix)] in databases for suffix in BESIDE + IGNORED):
            continue
        if not stat.S_ISREG(mode):
            out.append((name, mode, data))
            continue
        rename = Renaming(minted)
        out.append((name, mode, dump(name, files, volatile, rename) if name in databases else rename(data)))
    return tuple(out)


class Renaming:
    """The minted values of one file, each renamed by its rank in order of first appearance.

    Renamed inside each value, before the value is encoded, so that the length of what was drawn (a random
    fraction's digits) is not left behind in a length prefix. A pattern's group ``keep`` is kept beside the
    new name: the part of a minted value that is not drawn (a channel version's step). A match of its group
    ``drop`` is left out, unnamed: a value whose very presence is a race (a message ID that another thread
    may or may not have set before the message was serialized).
    """

    def __init__(self, minted: Minted):
        self.pattern = re.compile(minted) if minted else None
        self.names: dict[bytes, bytes] = {}

    def __call__(self, value: Any) -> Any:
        if self.pattern is None or not isinstance(value, str | bytes):
            return value
        if isinstance(value, str):
            return self.pattern.sub(self.name, value.encode("utf-8", "surrogateescape")).decode("utf-8", "replace")
        return self.pattern.sub(self.name, value)

    def name(self, found: re.Match[bytes]) -> bytes:
        groups = found.groupdict()
        if groups.get("drop") is not None:
            return b""
        return (groups.get("keep") or b"") + self.names.setdefault(found[0], b"<%d>" % len(self.names))


def dump(name: str, files: Mapping[str, bytes], volatile: Volatile, rename: Renaming) -> bytes:
    """The database `name` as a restart would open it: its header's fields, its schema and each table's rows in
    the order they were inserted, its `volatile` columns left out and its minted values renamed."""
    with tempfile.TemporaryDirectory(dir="/dev/shm" if Path("/dev/shm").is_dir() else None) as place:
        path = Path(place) / "db"
        path.write_bytes(files[name])
        beside = [files.get(f"{name}{suffix}") for suffix in BESIDE]
        for suffix, data in zip(BESIDE, beside, strict=True):
            if data is not None:
                Path(f"{path}{suffix}").write_bytes(data)
        connection = sqlite3.connect(path, isolation_level=None)
        try:
            dumped = tables(connection, volatile, rename)
            connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")  # the WAL's header into the file, to be read
            return _encoder.encode((header(path.read_bytes()), schema(connection), dumped))
        except sqlite3.DatabaseError as error:  # not a database a restart could open: its bytes, and why
            return _encoder.encode(("unreadable", str(error), files[name], beside))
        finally:
            connection.close()


def header(data: bytes) -> dict[str, int]:
    """The fields of a database's header (`HEADER_FIELDS`) that say what it is, by name."""
    fields = {field: int.from_bytes(data[at:at + size], "big") for field, (at, size) in HEADER_FIELDS.items()}
    at, size = AUTO_VACUUM
    return {**fields, "auto-vacuum": int(any(data[at:at + size]))}


def schema(connection: sqlite3.Connection) -> list[tuple[str, str, str, str]]:
    """Every schema object (table, index, trigger, view) by its type, name, table and SQL: not where its pages are."""
    return connection.execute("SELECT type, name, tbl_name, coalesce(sql, '') FROM sqlite_master "
                              "ORDER BY type, name").fetchall()


def tables(connection: sqlite3.Connection, volatile: Volatile,
           rename: Renaming) -> list[tuple[str, list[list[Any]]]]:
    """Each table's name and its rows with their rowid (which a query may order by), in rowid order: the order
    they were inserted in, whatever their values (a table without rowids: sorted)."""
    found = connection.execute("SELECT name, sql FROM sqlite_master WHERE type = 'table' ORDER BY name").fetchall()
    dumped = []
    for table, sql in found:
        columns = [row[1] for row in connection.execute(f"PRAGMA table_info({quoted(table)})")]
        kept = ", ".join(quoted(c) for c in columns if (table, c) not in volatile) or "NULL"
        if "WITHOUT ROWID" in (sql or "").upper():
            rows = sorted(connection.execute(f"SELECT {kept} FROM {quoted(table)}"), key=_encoder.encode)
        else:
            rows = connection.execute(f"SELECT rowid, {kept} FROM {quoted(table)} ORDER BY rowid").fetchall()
        dumped.append((table, [[rename(cell) for cell in row] for row in rows]))
    return dumped


def quoted(identifier: str) -> str:
    """An SQL identifier, quoted."""
    return '"' + identifier.replace('"', '""') + '"'
