"""The service's records, keys, fences, counts and MCP tasks in one SQLite file, DIR/service.sqlite.

The service's promise is the tracker's (`crashlab.world.sqlite`): WAL mode, ``synchronous=FULL``,
and every change in one ``BEGIN IMMEDIATE`` transaction that commits before the answer leaves. So a
service killed at any instant restarts on the same file and finds exactly what it answered, and a
loop that dies waiting for an answer finds the change it asked for, or nothing, never half of it.

One connection, used by the one thread that runs the service's event loop: a request's reads and
its writes cannot interleave with another's, because nothing awaits between them.
"""

from __future__ import annotations

import json
import sqlite3
import time
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from crashlab.errors import BadInput
from crashlab.world.sqlite import schema_made_by, schema_of, transaction

#: The service's file, in the directory it is given.
SERVICE_FILE = "service.sqlite"

BEFORE_TASKS = """
CREATE TABLE IF NOT EXISTS records (
    seq INTEGER PRIMARY KEY,
    kind TEXT NOT NULL CHECK (kind IN ('issue', 'comment')),
    number INTEGER NOT NULL,
    issue INTEGER,
    title TEXT,
    body TEXT NOT NULL,
    key TEXT,
    UNIQUE (kind, number)
);
CREATE TABLE IF NOT EXISTS keys (
    key TEXT PRIMARY KEY,
    fingerprint TEXT NOT NULL,
    status INTEGER NOT NULL,
    answer TEXT NOT NULL,
    made REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS fences (key TEXT PRIMARY KEY);
CREATE TABLE IF NOT EXISTS counts (name TEXT PRIMARY KEY, value NOT NULL);
"""
#: MCP's tasks (`crashlab.service.tasks`): a file made before them is the service's all the same, and gains
#: the table as the service opens it.
TASKS = """
CREATE TABLE IF NOT EXISTS tasks (
    seq INTEGER PRIMARY KEY,
    tool TEXT NOT NULL,
    arguments TEXT NOT NULL,
    key TEXT,
    fingerprint TEXT NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('working', 'completed', 'failed', 'cancelled')),
    result TEXT,
    made REAL NOT NULL,
    updated REAL NOT NULL
);
"""
SCHEMA = BEFORE_TASKS + TASKS

#: Every table, in the order a dump lists them (the tasks are MCP's, `crashlab.service.tasks`).
TABLES = ("records", "keys", "fences", "counts", "tasks")
#: What `/_crashlab/state` counts, each a row of the counts table.
COUNTS = ("asks", "approvals", "model_calls")
#: The clock's offset, in hours, is kept beside the counts: a restart keeps the time it was moved to.
CLOCK = "clock_hours"

Kind = Literal["issue", "comment"]


class StoreError(BadInput):
    """A file that is not a SQLite database, or not the service's."""


@dataclass(frozen=True)
class Record:
    """An issue (``issue`` is None) or a comment on issue ``issue`` (``title`` is None)."""

    kind: Kind
    number: int
    issue: int | None
    title: str | None
    body: str
    key: str | None

    def as_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "number": self.number, "issue": self.issue, "title": self.title,
                "body": self.body, "key": self.key}


@dataclass(frozen=True)
class Kept:
    """The response kept under an idempotency key: what a replay answers and a lookup reports."""

    fingerprint: str
    status: int
    answer: dict[str, Any]
    made: float  # the service's clock, in seconds, when it was kept


@dataclass(frozen=True)
class Change:
    """One changing request the service decided to apply: the record to add, and the key to keep it under.

    ``keep`` is None when no key is to be kept (none was sent, the service is keyless, a live one
    already holds its first response, or the request fails after its effect under a contract that keeps
    only successes); the response kept is ``201 {"number": n}``, or ``failure`` with a 500 when the
    request fails after its effect under a contract that keeps failures too (Stripe's v1).
    """

    kind: Kind
    issue: int | None
    title: str | None
    body: str
    key: str | None
    keep: str | None  # the request's fingerprint, when its key is to be kept
    made: float
    failure: dict[str, Any] | None = None

    def kept(self, number: int) -> Kept:
        """What its key keeps once its record is `number`: the success, or the failure it answers instead."""
        assert self.keep is not None
        if self.failure is not None:
            return Kept(self.keep, 500, self.failure, self.made)
        return Kept(self.keep, 201, {"number": number}, self.made)


class NoSuchIssue(LookupError):
    """A comment on an issue the service does not hold."""


def check_file(path: Path) -> None:
    """Refuse (`StoreError`) a file at `path` that is not the service's, before anything writes to it.

    A look that writes nothing: the file is opened immutable, so SQLite makes no ``-wal`` or ``-shm``
    beside it, which a read-only opening of a WAL file does. Opened for writing first, another
    program's file had three tables added and was switched to WAL before it was refused (issue 39).
    No file, or an empty one, passes: the service makes its own. So does a file whose schema so far
    lives only in its WAL, after a crash, which reads as empty here: the service's schema is made
    in one transaction, so the WAL holds all of it or none.
    """
    if not path.is_file() or path.stat().st_size == 0:
        return
    try:
        connection = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro&immutable=1", uri=True)
        try:
            tables = schema_of(connection)
        finally:
            connection.close()
    except sqlite3.DatabaseError as error:
        raise StoreError(f"{path}: not a crashlab service database ({error}); give serve a directory of its "
                         "own") from None
    if tables and tables not in (schema_made_by(SCHEMA), schema_made_by(BEFORE_TASKS)):
        raise StoreError(f"{path}: not a crashlab service database: its tables are not the service's; give serve a "
                         "directory of its own")


class Store:
    """The service's one connection to its file."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        check_file(self.path)
        try:
            # Autocommit mode: transactions are begun and committed explicitly, never implicitly.
            self.connection = sqlite3.connect(self.path, isolation_level=None)
            self.connection.execute("PRAGMA journal_mode=WAL")
            self.connection.execute("PRAGMA synchronous=FULL")
            self.connection.executescript(f"BEGIN IMMEDIATE; {SCHEMA} COMMIT;")
            self.connection.execute("SELECT seq, kind, number, issue, title, body, key FROM records LIMIT 0")
            self.connection.execute("SELECT key, fingerprint, status, answer, made FROM keys LIMIT 0")
        except sqlite3.DatabaseError as error:
            raise StoreError(f"{self.path}: not a crashlab service database ({error})") from None

    def close(self) -> None:
        self.connection.close()

    def transaction(self) -> AbstractContextManager[sqlite3.Connection]:
        """Everything in the block commits together, before the block's caller goes on, or not at all."""
        return transaction(self.connection)

    # The clock: the wall's, moved on by the harness to expire keys without waiting a day.

    def now(self) -> float:
        """The service's time in seconds: `time.time()` plus the offset the harness advanced it by."""
        return time.time() + self._value(CLOCK) * 3600.0

    def advance(self, hours: float) -> float:
        """Move the clock on by `hours`; the offset it now stands at, in hours."""
        with self.transaction() as sql:
            offset = self._value(CLOCK) + hours
            sql.execute("INSERT OR REPLACE INTO counts (name, value) VALUES (?, ?)", (CLOCK, offset))
        return offset

    # Counts: the person's questions and approvals, the model calls a loop reported.

    def count(self, name: str) -> int:
        return int(self._value(name))

    def bump(self, name: str) -> int:
        """Add one to `name`'s count, committed; the new count."""
        with self.transaction() as sql:
            value = self.count(name) + 1
            sql.execute("INSERT OR REPLACE INTO counts (name, value) VALUES (?, ?)", (name, value))
        return value

    def _value(self, name: str) -> float:
        row = self.connection.execute("SELECT value FROM counts WHERE name = ?", (name,)).fetchone()
        return row[0] if row else 0

    # Records.

    def records(self) -> list[Record]:
        """Every record, in the order the service committed them."""
        rows = self.connection.execute("SELECT kind, number, issue, title, body, key FROM records ORDER BY seq")
        return [Record(*row) for row in rows]

    def issues(self) -> list[Record]:
        rows = self.connection.execute(
            "SELECT kind, number, issue, title, body, key FROM records WHERE kind = 'issue' ORDER BY number")
        return [Record(*row) for row in rows]

    def comments_on(self, issue: int) -> list[Record]:
        rows = self.connection.execute(
            "SELECT kind, number, issue, title, body, key FROM records WHERE kind = 'comment' AND issue = ? "
            "ORDER BY number", (issue,))
        return [Record(*row) for row in rows]

    def add(self, sql: sqlite3.Connection, change: Change) -> int:
        """Add `change`'s record inside the caller's transaction; its number (issues and comments each from 1)."""
        if change.kind == "comment":
            found = sql.execute("SELECT 1 FROM records WHERE kind = 'issue' AND number = ?", (change.issue,))
            if found.fetchone() is None:
                raise NoSuchIssue(change.issue)
        (number,) = sql.execute("SELECT COUNT(*) + 1 FROM records WHERE kind = ?", (change.kind,)).fetchone()
        sql.execute("INSERT INTO records (kind, number, issue, title, body, key) VALUES (?, ?, ?, ?, ?, ?)",
                    (change.kind, number, change.issue, change.title, change.body, change.key))
        return number

    # Keys and fences.

    def kept(self, key: str) -> Kept | None:
        """The response kept under `key`, expired or not: whether it still counts is the service's rule."""
        row = self.connection.execute("SELECT fingerprint, status, answer, made FROM keys WHERE key = ?",
                                      (key,)).fetchone()
        if row is None:
            return None
        fingerprint, status, answer, made = row
        return Kept(fingerprint, status, json.loads(answer), made)

    def keep(self, sql: sqlite3.Connection, key: str, kept: Kept) -> None:
        """Keep `kept` under `key` inside the caller's transaction, replacing an expired one."""
        sql.execute("INSERT OR REPLACE INTO keys (key, fingerprint, status, answer, made) VALUES (?, ?, ?, ?, ?)",
                    (key, kept.fingerprint, kept.status, json.dumps(kept.answer), kept.made))

    def fenced(self, key: str) -> bool:
        return self.connection.execute("SELECT 1 FROM fences WHERE key = ?", (key,)).fetchone() is not None

    def fence(self, key: str) -> None:
        with self.transaction() as sql:
            sql.execute("INSERT OR IGNORE INTO fences (key) VALUES (?)", (key,))

    def reset(self) -> None:
        """Empty everything: records, keys, fences, counts, the clock's offset and MCP's tasks."""
        with self.transaction() as sql:
            for table in TABLES:  # names, never input
                sql.execute(f"DELETE FROM {table}")


@dataclass(frozen=True)
class Dump:
    """Everything the service's file holds, row by row in a canonical order: what a restart from a snapshot
    puts back (`load`), and, but for the time each key was kept, what two equal states share."""

    records: tuple[tuple[Any, ...], ...]  # seq, kind, number, issue, title, body, key: in commit order
    keys: tuple[tuple[Any, ...], ...]  # key, fingerprint, status, answer, made
    fences: tuple[str, ...]
    counts: tuple[tuple[str, Any], ...]
    tasks: tuple[tuple[Any, ...], ...] = ()  # seq, tool, arguments, key, fingerprint, status, result, made, updated

    def content(self) -> tuple[Any, ...]:
        """The dump without the wall-clock times keys were kept and tasks made, which no two runs share."""
        return self.records, tuple(row[:4] for row in self.keys), self.fences, self.counts, \
            tuple(row[:7] for row in self.tasks)

    def state(self) -> dict[str, Any]:
        """What ``/_crashlab/state`` would answer."""
        records = [Record(*row[1:]).as_json() for row in self.records]
        counts = dict(self.counts)
        return {"records": records, **{name: int(counts.get(name, 0)) for name in COUNTS}}


def dump(path: Path) -> Dump:
    """The file at `path`, read from another process than the service's (what it committed, never what it
    holds in memory), and written nothing."""
    connection = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        rows = [tuple(connection.execute(f"SELECT * FROM {table} ORDER BY {order}"))  # names, never input
                for table, order in (("records", "seq"), ("keys", "key"), ("fences", "key"), ("counts", "name"),
                                     ("tasks", "seq"))]
    finally:
        connection.close()
    return Dump(rows[0], rows[1], tuple(key for (key,) in rows[2]), rows[3], rows[4])


def load(path: Path, dumped: Dump) -> None:
    """Make the file at `path` hold exactly `dumped`, in one transaction, while its service waits for a request."""
    connection = sqlite3.connect(path, isolation_level=None, timeout=10)
    try:
        with transaction(connection) as sql:
            for table in TABLES:  # names, never input
                sql.execute(f"DELETE FROM {table}")
            sql.executemany("INSERT INTO records VALUES (?, ?, ?, ?, ?, ?, ?)", dumped.records)
            sql.executemany("INSERT INTO keys VALUES (?, ?, ?, ?, ?)", dumped.keys)
            sql.executemany("INSERT INTO fences VALUES (?)", [(key,) for key in dumped.fences])
            sql.executemany("INSERT INTO counts VALUES (?, ?)", dumped.counts)
            sql.executemany("INSERT INTO tasks VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", dumped.tasks)
    finally:
        connection.close()


def one_txn(store: Store, change: Change) -> int:
    """The record, its key and the kept response in one transaction: no death leaves one without the other."""
    with store.transaction() as sql:
        number = store.add(sql, change)
        if change.key is not None and change.keep is not None:
            store.keep(sql, change.key, change.kept(number))
    return number


def record_only(store: Store, change: Change) -> int:
    """The first of two steps: the record alone. A death before the second leaves it without its key."""
    with store.transaction() as sql:
        return store.add(sql, change)


def key_only(store: Store, change: Change, number: int) -> None:
    """The second of two steps: the key, and the response kept under it."""
    if change.key is not None and change.keep is not None:
        with store.transaction() as sql:
            store.keep(sql, change.key, change.kept(number))


def next_number(store: Store, change: Change) -> int:
    """The number `change`'s record will get, written nowhere yet: what an answer sent before the commit says."""
    sql = store.connection
    if change.kind == "comment":
        found = sql.execute("SELECT 1 FROM records WHERE kind = 'issue' AND number = ?", (change.issue,))
        if found.fetchone() is None:
            raise NoSuchIssue(change.issue)
    (number,) = sql.execute("SELECT COUNT(*) + 1 FROM records WHERE kind = ?", (change.kind,)).fetchone()
    return int(number)


#: How a changing request is made durable, by name: ``one-txn`` commits the record and its key
#: together, then answers; ``two-step`` commits the record, then the key; ``ack-first`` answers, and
#: writes the request behind its answer, when the next request arrives.
COMMITS = ("ack-first", "two-step", "one-txn")
