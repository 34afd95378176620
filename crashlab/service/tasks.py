"""MCP's tasks as the service keeps them: a tool call answered with a handle, and how far its work got.

A task is a row of the service's file (`crashlab.service.store`), committed before its handle
leaves, as the Tasks extension requires: a ``tasks/get`` for any handle a client ever received
resolves, after a crash of either side. It is ``working`` until its work (the tool call) is
applied, then ``completed`` with the tool's result, or ``cancelled`` if a client cancelled it first:
a settled task never changes again.

Its ID is its sequence number. crashlab's service is a test double, and a handle a story can name
(task 1, task 2) keeps every run of a sweep alike; a real server's handle should be unguessable,
for without an authorization context it is all that keeps one client from another's task.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Literal

from crashlab.service.store import Store

Status = Literal["working", "completed", "failed", "cancelled"]

COLUMNS = "seq, tool, arguments, key, fingerprint, status, result, made, updated"


@dataclass(frozen=True)
class Task:
    """One task: the call it stands for (its tool, arguments, key and fingerprint), and where it stands."""

    id: str
    tool: str
    arguments: dict[str, Any]
    key: str | None
    fingerprint: str
    status: Status
    result: dict[str, Any] | None  # the tool's result once completed, as the wire carries it
    made: float  # the service's clock, in seconds
    updated: float

    @classmethod
    def of(cls, row: tuple[Any, ...]) -> Task:
        seq, tool, arguments, key, fingerprint, status, result, made, updated = row
        return cls(str(seq), tool, json.loads(arguments), key, fingerprint, status,
                   None if result is None else json.loads(result), made, updated)


def create(store: Store, tool: str, arguments: dict[str, Any], key: str | None, fingerprint: str,
           now: float) -> Task:
    """Make a working task for the call, committed before this returns."""
    with store.transaction() as sql:
        cursor = sql.execute("INSERT INTO tasks (tool, arguments, key, fingerprint, status, made, updated) "
                             "VALUES (?, ?, ?, ?, 'working', ?, ?)",
                             (tool, json.dumps(arguments), key, fingerprint, now, now))
    return Task(str(cursor.lastrowid), tool, arguments, key, fingerprint, "working", None, now, now)


def find(store: Store, task_id: str) -> Task | None:
    if not task_id.isdecimal() or len(task_id) > 18:
        return None
    row = store.connection.execute(f"SELECT {COLUMNS} FROM tasks WHERE seq = ?", (int(task_id),)).fetchone()
    return None if row is None else Task.of(row)


def under_key(store: Store, key: str) -> Task | None:
    """The newest task made under `key`, if any."""
    row = store.connection.execute(f"SELECT {COLUMNS} FROM tasks WHERE key = ? ORDER BY seq DESC LIMIT 1",
                                   (key,)).fetchone()
    return None if row is None else Task.of(row)


def oldest_working(store: Store) -> Task | None:
    """The task the worker runs next: the first made of those still working."""
    row = store.connection.execute(f"SELECT {COLUMNS} FROM tasks WHERE status = 'working' ORDER BY seq LIMIT 1"
                                   ).fetchone()
    return None if row is None else Task.of(row)


def settle(store: Store, task_id: str, status: Status, result: dict[str, Any] | None, now: float) -> None:
    """Move a working task to `status`, committed; a task already settled keeps its first end."""
    with store.transaction() as sql:
        sql.execute("UPDATE tasks SET status = ?, result = ?, updated = ? WHERE seq = ? AND status = 'working'",
                    (status, None if result is None else json.dumps(result), now, int(task_id)))
