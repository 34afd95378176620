"""The world in one SQLite file: what outlives a real process, and all of crashlab's SQL.

`World.new` keeps the world in Python objects, which is enough while every crash is an exception
inside one process. A real death (SIGKILL, a power cut) takes every object with it, so here the
tracker's records and keys, the person's counts, the approval desk's decisions and pending
questions, the model's call counter and the servers that already died all live in a database file.
A new process opens the same file and finds exactly what was committed, nothing else.

Durability is the tracker's promise: the standard library's `sqlite3`, WAL mode, ``synchronous=FULL``,
and every change in one transaction that commits before the caller gets its answer. A request's
record and its key are written together, so no death can leave one without the other. The tracker
notes the same events and hits the same crash points, in the same order, as the in-memory one: a
loop cannot tell them apart, and a test holds the two sweeps equal.
"""

from __future__ import annotations

import os
import sqlite3
import threading
from collections.abc import Callable, Iterator, Mapping, MutableMapping, MutableSet, Sequence
from contextlib import contextmanager, suppress
from functools import cache
from pathlib import Path
from typing import Any

from crashlab.errors import BadInput
from crashlab.fsync import sync_directory
from crashlab.job import Call, Job
from crashlab.job.reader import MAX_ISSUE
from crashlab.profiles import DEFAULT, Profile, find
from crashlab.protocols.points import Recorder
from crashlab.world import (
    TRACKER_MODES,
    ApprovalDesk,
    DeskMode,
    Fenced,
    Model,
    Person,
    Record,
    TrackerMode,
    TrackerProtocol,
    Wire,
    World,
)
from crashlab.world.tracker import REFUSED, Modes, holds_issue, other_payload, refusal, refused, screened

#: The world's file, in a run directory or a scenario's.
TRACKER_FILE = "tracker.sqlite"
#: What SQLite keeps beside a database, by the suffix it adds to the database's name.
SIDE_FILES = ("-wal", "-shm", "-journal")
#: The suffix of a tracker being made (`create`): renamed to the tracker's own name once it is whole.
ASIDE = ".new"
#: What the first process claims in the meta table, so that no later one resumes the world under another job or tracker.
CLAIMS = ("job", "fingerprint", "tracker")

SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS records (
    seq INTEGER PRIMARY KEY,
    kind TEXT NOT NULL CHECK (kind IN ('issue', 'comment')),
    number INTEGER NOT NULL,
    call TEXT NOT NULL,
    key TEXT,
    issue INTEGER,
    text TEXT NOT NULL,
    UNIQUE (kind, number)
);
CREATE TABLE IF NOT EXISTS keys (key TEXT PRIMARY KEY, number INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS counts (name TEXT PRIMARY KEY, value INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS members (name TEXT NOT NULL, item TEXT NOT NULL, PRIMARY KEY (name, item));
CREATE TABLE IF NOT EXISTS decisions (key TEXT PRIMARY KEY, approved INTEGER NOT NULL);
"""

#: A database's tables and indexes, as `sqlite_schema` lists them: type, name, table, SQL.
Schema = frozenset[tuple[str, str, str, str | None]]
#: What each table holds when crashlab wrote it, as SQL true of a row it never writes: numbers and
#: counts within a real tracker's 32-bit range, texts as text. A row that matches was put there by
#: another hand, and would fail somewhere inside the loop (an overflow, a text that is a number).
FOREIGN_ROWS = {
    "meta": "typeof(name) != 'text' OR typeof(value) != 'text'",
    "records": ("typeof(number) != 'integer' OR number NOT BETWEEN 1 AND {max} OR typeof(call) != 'text' "
                "OR typeof(key) NOT IN ('text', 'null') OR typeof(text) != 'text' "
                "OR (kind = 'issue') != (issue IS NULL) OR typeof(issue) NOT IN ('integer', 'null') "
                "OR issue NOT BETWEEN 1 AND {max}"),
    "keys": "typeof(key) != 'text' OR typeof(number) != 'integer' OR number NOT BETWEEN 0 AND {max}",  # 0: refused
    "counts": "typeof(name) != 'text' OR typeof(value) != 'integer' OR value NOT BETWEEN 0 AND {max}",
    "members": "typeof(name) != 'text' OR typeof(item) != 'text'",
    "decisions": "typeof(key) != 'text' OR approved NOT IN (0, 1)",
}


class WorldError(BadInput):
    """A database that belongs to another job or another kind of tracker, or is not crashlab's."""


@contextmanager
def transaction(connection: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """Everything in the block commits together or not at all, and before the block's caller goes on.

    ``BEGIN IMMEDIATE`` takes the write lock at once, so reading a count and writing the next
    number cannot interleave with another writer.
    """
    connection.execute("BEGIN IMMEDIATE")
    try:
        yield connection
    except BaseException:
        connection.execute("ROLLBACK")
        raise
    connection.execute("COMMIT")


class Database:
    """One connection to a world's file. Every write is a transaction committed before it returns.

    Open it with ``with Database(path) as db``: the caller owns its life, and a process that dies
    holding it loses nothing that was committed.
    """

    def __init__(self, path: str | Path, readonly: bool = False):
        self.path = Path(path)
        #: Held for each statement and for a transaction's whole block: sqlite3 serialises calls on one
        #: connection, not transactions, and a second thread's BEGIN inside the first's transaction fails.
        self.lock = threading.RLock()
        try:
            # Autocommit mode: transactions are begun and committed explicitly, never implicitly.
            if readonly:  # a look that writes nothing: not the schema, not the journal mode, no checkpoint
                uri = self.path.resolve().as_uri() + "?mode=ro"
                self.connection = sqlite3.connect(uri, uri=True, isolation_level=None)
                return
            # A framework may call the tools on worker threads of its own, several at once: one
            # connection serves them all, each statement and each transaction under `lock`.
            self.connection = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
            self.connection.execute("PRAGMA journal_mode=WAL")
            self.connection.execute("PRAGMA synchronous=FULL")
            self.connection.executescript(f"BEGIN; {SCHEMA} COMMIT;")  # a death leaves all its tables or none
        except sqlite3.DatabaseError as error:
            raise WorldError(f"{self.path}: not a crashlab tracker database ({error})") from None

    def __enter__(self) -> Database:
        return self

    @property
    def empty(self) -> bool:
        """Whether the file holds no tables at all: a tracker never opened, or one that lost all it held."""
        with self.lock:
            return not schema_of(self.connection)

    def check(self) -> None:
        """Refuse (`WorldError`) a database whose tables are not crashlab's, or hold what crashlab never writes.

        Everywhere else the world is read on trust; this is the look before a run resumes it or a
        person is shown it, so that another program's file, or one someone has been at (a table
        swapped for a view, a count of 2**62), is refused in one line and never written to.
        An empty database passes: it holds nothing to distrust.
        """
        try:
            with self.lock:
                tables = schema_of(self.connection)
            if tables and tables != _crashlab_schema():
                raise WorldError(f"{self.path}: not a crashlab tracker database: its tables are not crashlab's")
            for table, foreign in FOREIGN_ROWS.items() if tables else ():
                query = f"SELECT 1 FROM {table} WHERE {foreign.format(max=MAX_ISSUE)} LIMIT 1"  # names, never input
                if self.row(query):
                    raise WorldError(f"{self.path}: not a crashlab tracker database: its {table} table holds "
                                     "a value crashlab never writes")
        except sqlite3.DatabaseError as error:
            raise WorldError(f"{self.path}: not a crashlab tracker database ({error})") from None


    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self.connection.close()

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """A transaction on the connection, which no other thread uses until it ends."""
        with self.lock, transaction(self.connection) as sql:
            yield sql

    def rows(self, query: str, params: Sequence[Any] = ()) -> list[Any]:
        """Every row of one statement, read under the lock (a cursor read later could interleave)."""
        with self.lock:
            return self.connection.execute(query, params).fetchall()

    def row(self, query: str, params: Sequence[Any] = ()) -> Any:
        """The first row of one statement, or None."""
        found = self.rows(query, params)
        return found[0] if found else None

    def meta(self, name: str) -> str | None:
        row = self.row("SELECT value FROM meta WHERE name = ?", (name,))
        return row[0] if row else None

    def claim(self, name: str, value: str) -> str:
        """Set `name` to `value` unless it is already set; return what the database holds."""
        with self.transaction() as sql:
            sql.execute("INSERT OR IGNORE INTO meta (name, value) VALUES (?, ?)", (name, value))
        return self.meta(name) or value

    def count(self, name: str) -> int:
        row = self.row("SELECT value FROM counts WHERE name = ?", (name,))
        return row[0] if row else 0

    def set_count(self, name: str, value: int) -> None:
        with self.transaction() as sql:
            sql.execute("INSERT OR REPLACE INTO counts (name, value) VALUES (?, ?)", (name, value))

    def keys(self) -> dict[str, int]:
        return dict(self.rows("SELECT key, number FROM keys"))

    def records(self, call_id: str | None = None) -> list[Record]:
        """The tracker's records in the order it made them, all or those one script call caused."""
        query = "SELECT kind, number, call, key, issue, text FROM records"
        rows = self.rows(
            query + " ORDER BY seq" if call_id is None else query + " WHERE call = ? ORDER BY seq",
            () if call_id is None else (call_id,),
        )
        return [Record(kind, number, call, key, issue, text) for kind, number, call, key, issue, text in rows]


def _crashlab_schema() -> Schema:
    """The schema entries of a database crashlab made, as SQLite records them."""
    return schema_made_by(SCHEMA)


@cache
def schema_made_by(script: str) -> Schema:
    """The schema entries `script` makes, as SQLite records them (made once, in memory)."""
    connection = sqlite3.connect(":memory:")
    try:
        connection.executescript(script)
        return schema_of(connection)
    finally:
        connection.close()


def schema_of(connection: sqlite3.Connection) -> Schema:
    return frozenset(connection.execute("SELECT type, name, tbl_name, sql FROM sqlite_schema"))


class SqliteTracker(Modes):
    """The tracker of `crashlab.world.Tracker`, with its records and keys in a database file.

    Numbering is the same (issues and comments each from 1), and so are the modes (`Modes`):
    ``keyed`` honours a key, ``lookup`` remembers it only to answer lookups, ``fencing`` also fences
    a key a lookup did not find (in the members table), ``keyless`` ignores it. So is the profile's
    contract, but for its retention: a world in a database keeps no clock (`key_times`).
    """

    def __init__(self, points: Recorder, db: Database, mode: TrackerMode = "keyed", profile: Profile | None = None):
        if mode not in TRACKER_MODES:
            raise ValueError(f"unknown tracker mode {mode!r} (valid: {', '.join(TRACKER_MODES)})")
        self.points = points
        self.db = db
        self.mode = mode
        self.profile = profile or self.profile
        self._fenced = DurableSet(db, "fenced")

    @property
    def records(self) -> list[Record]:
        return self.db.records()

    def request(self, call: Call, args: dict[str, Any], key: str | None = None) -> int:
        """Apply a changing request; the record and its key (or the refusal kept under it) are committed before
        the answer leaves."""
        self.points.guard("a tracker request made")
        if self.fences and key in self._fenced:
            raise Fenced(f"call {call.id}'s key {key} was fenced by a lookup: the tracker refuses it")
        status = screened(self.profile, call, key)
        if status is not None:
            raise refusal(self.points, call, key, status)
        keeps = key is not None and self.mode != "keyless"
        with self.db.transaction() as sql:
            known = None
            if key is not None and self.honours_keys:
                known = sql.execute("SELECT number FROM keys WHERE key = ?", (key,)).fetchone()
            if key is not None and known is not None:
                status = other_payload(self.profile, self._kept(sql, key, known[0]), call.tool, args)
            if status is not None:
                number = REFUSED  # refused: the key keeps its first answer, and nothing is written
            elif known is None:
                number = self._add(sql, call, args, key)
                if keeps:
                    sql.execute("INSERT OR IGNORE INTO keys (key, number) VALUES (?, ?)", (key, number))
            else:
                (number,) = known
        if status is not None:
            raise refusal(self.points, call, key, status)
        if number == REFUSED:
            raise refused(self.points, call, key, args["issue"])
        self.points.note("request", call.tool, call=call.id, args=args, key=key, applied=known is None,
                         answer=number, forgot=False)
        self.points.hit("accepted")
        return number

    @staticmethod
    def _kept(sql: sqlite3.Connection, key: str, number: int) -> Record | None:
        """The record whose answer `key` keeps, in the caller's transaction; None for a kept refusal."""
        row = sql.execute("SELECT kind, number, call, key, issue, text FROM records WHERE key = ? AND number = ? "
                          "ORDER BY seq DESC LIMIT 1", (key, number)).fetchone()
        return Record(*row) if row else None

    @staticmethod
    def _add(sql: sqlite3.Connection, call: Call, args: dict[str, Any], key: str | None) -> int:
        """The request's new record, in the caller's transaction: its number, or `REFUSED` for a comment on no
        issue."""
        kind = "issue" if call.tool == "create_issue" else "comment"
        (number,) = sql.execute("SELECT COUNT(*) + 1 FROM records WHERE kind = ?", (kind,)).fetchone()
        if kind == "issue":
            issue, text = None, f"{args['title']}\n{args['body']}"
        else:
            (issues,) = sql.execute("SELECT COUNT(*) FROM records WHERE kind = 'issue'").fetchone()
            if not holds_issue(args["issue"], issues):
                return REFUSED
            issue, text = args["issue"], args["body"]
        sql.execute("INSERT INTO records (kind, number, call, key, issue, text) VALUES (?, ?, ?, ?, ?, ?)",
                    (kind, number, call.id, key, issue, text))
        return int(number)

    def lookup(self, key: str) -> int | None:
        self.points.guard("a lookup request made")
        if not self.answers_lookups:
            raise RuntimeError("a keyless tracker cannot be asked about a key")
        row = self.db.row("SELECT number FROM keys WHERE key = ?", (key,))
        answer = row[0] if row and row[0] != REFUSED else None  # a refused request made nothing
        fenced = answer is None and self.fences  # a fencing tracker honours no key: a kept refusal stops nothing
        if fenced:
            self._fenced.add(key)
        self.points.note("lookup", "key", key=key, answer=answer, fenced=fenced)
        return answer

    def fenced(self) -> frozenset[str]:
        return frozenset(self._fenced)

    def made_by(self, call_id: str) -> list[Record]:
        return self.db.records(call_id)

    def keys(self) -> dict[str, int]:
        return self.db.keys()

    def key_times(self) -> dict[str, float]:
        """A world in a database keeps no clock: its keys were all made at hour 0, and never expire."""
        return dict.fromkeys(self.db.keys(), 0.0)

    def unsaved(self) -> tuple[int, frozenset[str]]:
        """Nothing: a record and its key commit in one transaction before the answer leaves."""
        return 0, frozenset()


class DurableSet(MutableSet[str]):
    """A set of strings in the database, under a name: the desk's pending questions, the dead servers."""

    def __init__(self, db: Database, name: str):
        self.db = db
        self.name = name

    def __contains__(self, item: object) -> bool:
        query = "SELECT 1 FROM members WHERE name = ? AND item = ?"
        return self.db.row(query, (self.name, item)) is not None

    def __iter__(self) -> Iterator[str]:
        query = "SELECT item FROM members WHERE name = ? ORDER BY item"
        return iter([item for (item,) in self.db.rows(query, (self.name,))])

    def __len__(self) -> int:
        query = "SELECT COUNT(*) FROM members WHERE name = ?"
        return self.db.row(query, (self.name,))[0]

    def add(self, item: str) -> None:
        with self.db.transaction() as sql:
            sql.execute("INSERT OR IGNORE INTO members (name, item) VALUES (?, ?)", (self.name, item))

    def discard(self, item: str) -> None:
        with self.db.transaction() as sql:
            sql.execute("DELETE FROM members WHERE name = ? AND item = ?", (self.name, item))


class Decisions(MutableMapping[str, bool]):
    """The approval desk's decisions by key: once the person decided, every restart finds it here."""

    def __init__(self, db: Database):
        self.db = db

    def __getitem__(self, key: str) -> bool:
        row = self.db.row("SELECT approved FROM decisions WHERE key = ?", (key,))
        if row is None:
            raise KeyError(key)
        return bool(row[0])

    def __setitem__(self, key: str, approved: bool) -> None:
        with self.db.transaction() as sql:
            sql.execute("INSERT OR REPLACE INTO decisions (key, approved) VALUES (?, ?)", (key, int(approved)))

    def __delitem__(self, key: str) -> None:
        with self.db.transaction() as sql:
            if sql.execute("DELETE FROM decisions WHERE key = ?", (key,)).rowcount == 0:
                raise KeyError(key)

    def __iter__(self) -> Iterator[str]:
        return iter([key for (key,) in self.db.rows("SELECT key FROM decisions ORDER BY key")])

    def __len__(self) -> int:
        return self.db.row("SELECT COUNT(*) FROM decisions")[0]


class Count:
    """An integer attribute kept in the owner's database: ``person.asks += 1`` commits the new count."""

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def __get__(self, owner: Any, cls: type | None = None) -> Any:
        return self if owner is None else owner.db.count(self.name)

    def __set__(self, owner: Any, value: int) -> None:
        owner.db.set_count(self.name, value)


class SqlitePerson(Person):
    """`world.Person`, answering from the tracker as it does, with both counts in the database.

    It does not call `Person.__init__`, which would set the counts to zero: a restart must find the
    questions its predecessors asked.
    """

    asks = Count()
    approvals = Count()

    def __init__(self, points: Recorder, db: Database, tracker: TrackerProtocol, approves: bool = True):
        self.points = points
        self.db = db
        self.tracker = tracker
        self.approves = approves
        self.earlier = 0  # one run per world file


class SqliteModel(Model):
    """The scripted model, counting its calls in the database, so a restart's calls add to the count."""

    calls = Count()

    def __init__(self, points: Recorder, db: Database, job: Job):
        self.points = points
        self.db = db
        self.job = job


#: Builds the person of a world in a database: `SqlitePerson` answers as the scripted person does.
PersonFactory = Callable[[Recorder, Database, TrackerProtocol], Person]
#: Where the tracker lives: made from the recorder, the run's database and the mode.
TrackerFactory = Callable[[Recorder, Database, TrackerMode], TrackerProtocol]


def open_world(db: Database, job: Job, points: Recorder, tracker_mode: TrackerMode = "keyed",
               person: PersonFactory = SqlitePerson, desk: DeskMode = "remembers",
               tracker: TrackerFactory | None = None, profile: str = DEFAULT) -> World:
    """The world of `job` in `db`: made on first use, and refused if it was made for another job or tracker.

    The job's name, its fingerprint (all it does, `Job.fingerprint`) and the tracker's mode are
    claimed by the first process, so a later one cannot resume a run of another job, or under
    different rules (a keyless restart of a keyed run would break its keys).
    A desk that remembers keeps its questions and decisions in `db`; one that forgets keeps them in
    the process, and loses them with it. `tracker` puts the tracker elsewhere (a running service).
    """
    if tracker_mode not in TRACKER_MODES:
        raise WorldError(f"unknown tracker {tracker_mode!r} (valid: {', '.join(TRACKER_MODES)})")
    for name, wanted in claims(job, tracker_mode).items():
        check_claims(db.path, {name: db.claim(name, wanted)}, job, tracker_mode)
    return world_in(db, job, points, tracker_mode, person, desk, tracker, profile)


def create(path: Path, claimed: Mapping[str, str]) -> None:
    """Make a world's database at `path` whole, its claims made, or not at all.

    Made in place, a tracker passes through states no finished one is in: SQLite writes its first
    page under a rollback journal, which a look opened read-only cannot roll back, and the tables
    come one by one. A run killed there left a file the next run refused as not crashlab's (20 of
    41 kills inside the creation, issue 38). So it is made beside its place, `NAME.new`, with its
    WAL checkpointed into it and synced, and renamed into place: a death before the rename leaves
    no tracker, only the scratch the next creation removes, and after it a whole tracker.
    """
    aside = path.with_name(path.name + ASIDE)
    scratch = (aside, *(aside.with_name(aside.name + suffix) for suffix in SIDE_FILES))
    for name in scratch:  # a dead creation's, never a tracker: nothing but `create` writes there
        with suppress(FileNotFoundError):
            os.unlink(name)
    with Database(aside) as db:
        with db.transaction() as sql:
            sql.executemany("INSERT INTO meta (name, value) VALUES (?, ?)", claimed.items())
        busy, _, _ = db.row("PRAGMA wal_checkpoint(TRUNCATE)")
        assert not busy, f"{aside} is open in another connection, which only `create` makes"
    for name in scratch[1:]:  # emptied by the checkpoint: all the tracker holds is in `aside` now
        with suppress(FileNotFoundError):
            os.unlink(name)
    fd = os.open(aside, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
    os.rename(aside, path)
    sync_directory(path.parent)


def claims(job: Job, tracker_mode: str) -> dict[str, str]:
    """What a world of `job` under `tracker_mode` claims in its meta table, by name (`CLAIMS`)."""
    return dict(zip(CLAIMS, (job.name, job.fingerprint, tracker_mode), strict=True))


def check_claims(path: Path, held: dict[str, str], job: Job, tracker_mode: str) -> None:
    """Refuse (`WorldError`) a world that `held` says was made for another job or tracker; a claim not yet
    held passes."""
    for name, wanted in claims(job, tracker_mode).items():
        if held.get(name, wanted) == wanted:
            continue
        if name == "fingerprint":
            raise WorldError(f"{path} was made for another job named {job.name!r}: its calls or answer differ "
                             f"from {job.source}'s")
        raise WorldError(f"{path} was made for {name} {held[name]!r}, not {wanted!r}")


def world_in(db: Database, job: Job, points: Recorder, tracker_mode: TrackerMode = "keyed",
             person: PersonFactory = SqlitePerson, desk: DeskMode = "remembers",
             tracker: TrackerFactory | None = None, profile: str = DEFAULT) -> World:
    """The world in `db` as it stands, claiming nothing: for a look at it, as the harness takes after a death.
    Its tracker is in `db` too, keeping `profile`'s contract, unless `tracker` makes one elsewhere."""
    made = tracker(points, db, tracker_mode) if tracker else SqliteTracker(points, db, tracker_mode, find(profile))
    someone = person(points, db, made)
    if desk == "remembers":
        approvals = ApprovalDesk(points, someone, desk, DurableSet(db, "pending"), Decisions(db))
    else:
        approvals = ApprovalDesk(points, someone, desk)
    return World(made, someone, approvals, SqliteModel(points, db, job), Wire(made),
                 DurableSet(db, "servers_died"))
