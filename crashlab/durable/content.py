"""A run directory's files as a value: what a restart will read in them, not how they are laid out.

Two deaths can leave the same durable state in different bytes. A SQLite database's pages move as it
grows and frees them, its WAL holds frames that no commit ended (a restart ignores them) or that the
main file already holds, and its ``-shm`` index is rebuilt by whoever opens it next. Prefix sharing
restarts once per distinct state, so a fingerprint of bytes splits one state into many and buys
nothing from them. A database is taken here as a restart opens it: copied with its WAL and its hot
journal (which opening replays or rolls back), then dumped table by table, its rows in a canonical
order. Any other file is its bytes.

A runtime also stamps its rows with clocks and random IDs. Those it never acts on (when a step started,
the ID of the process that ran it) it names as `Volatile` columns, left out. Those it does act on, but
only by equality and by the order it made them in (LangGraph's checkpoint and message IDs, inside its
serialized checkpoints), it names by a pattern, `Minted`: each value is renamed by where it first
appears, the rows in the order they were inserted, so two states that differ only in what each process
happened to draw count as one. Neither is argued but checked: a shared sweep restarts once from one of
the states that are equal but for them, and must agree with the re-executed sweep, scenario by scenario
(``same_but_states`` in the slow suite).
"""

from __future__ import annotations

import re
import sqlite3
import tempfile
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import msgspec

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

_encoder = msgspec.msgpack.Encoder()


def content(files: Iterable[tuple[str, bytes]], volatile: Volatile = frozenset(),
            minted: Minted = b"") -> tuple[tuple[str, bytes], ...]:
    """Each file's content, by name: a database's as its dump, another file's as its bytes; in either, each
    `minted` value renamed by where it first appears in the file."""
    kept = dict(files)
    out = []
    for name, data in sorted(kept.items()):
        if name.endswith(IGNORED) or (name.endswith(BESIDE) and name.rsplit("-", 1)[0] in kept):
            continue
        rename = Renaming(minted)
        out.append((name, dump(name, kept, volatile, rename) if data.startswith(HEADER) else rename(data)))
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
    """The database `name` as a restart would open it: its schema and each table's rows in the order they were
    inserted, its `volatile` columns left out and its minted values renamed."""
    with tempfile.TemporaryDirectory(dir="/dev/shm" if Path("/dev/shm").is_dir() else None) as place:
        path = Path(place) / "db"
        path.write_bytes(files[name])
        for suffix in BESIDE:
            if f"{name}{suffix}" in files:
                Path(f"{path}{suffix}").write_bytes(files[f"{name}{suffix}"])
        connection = sqlite3.connect(path, isolation_level=None)
        try:
            return _encoder.encode(tables(connection, volatile, rename))
        except sqlite3.DatabaseError as error:  # not a database a restart could open: its bytes, and why
            return _encoder.encode(("unreadable", str(error), files[name]))
        finally:
            connection.close()


def tables(connection: sqlite3.Connection, volatile: Volatile,
           rename: Renaming) -> list[tuple[str, str, list[list[Any]]]]:
    """Each table's name, its SQL, and its rows with their rowid (which a query may order by), in rowid order: the
    order they were inserted in, whatever their values (a table without rowids: sorted)."""
    schema = connection.execute("SELECT name, sql FROM sqlite_master WHERE type = 'table' ORDER BY name").fetchall()
    dumped = []
    for table, sql in schema:
        columns = [row[1] for row in connection.execute(f"PRAGMA table_info({quoted(table)})")]
        kept = ", ".join(quoted(c) for c in columns if (table, c) not in volatile) or "NULL"
        if "WITHOUT ROWID" in (sql or "").upper():
            rows = sorted(connection.execute(f"SELECT {kept} FROM {quoted(table)}"), key=_encoder.encode)
        else:
            rows = connection.execute(f"SELECT rowid, {kept} FROM {quoted(table)} ORDER BY rowid").fetchall()
        dumped.append((table, sql or "", [[rename(cell) for cell in row] for row in rows]))
    return dumped


def quoted(identifier: str) -> str:
    """An SQL identifier, quoted."""
    return '"' + identifier.replace('"', '""') + '"'
