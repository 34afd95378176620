"""An agent that keeps its progress in SQLite, as an agent framework's checkpointer does: run as
``python sqlite_agent.py [--keyed]``, it knows nothing of crashlab.

It files two issues and comments on the first through the issue service at ``CRASHLAB_TRACKER_URL``,
committing each step's result to ``progress.sqlite`` in its working directory (WAL mode, synchronous
FULL: each commit is a write to the WAL and its fsync) after the request. With ``--keyed`` each
request carries an ``Idempotency-Key`` made of the run's ID and the step, the run's ID committed
before any request carries it. It imports nothing but the standard library.
"""

import json
import os
import sqlite3
import sys
import urllib.request
import uuid

STEPS = [("A", "issue", "Login fails on Safari"), ("B", "issue", "Export times out"),
         ("C", "comment", "Same root cause as the export timeout")]


def post(path: str, payload: dict, key: str | None) -> int:
    headers = {"Content-Type": "application/json", **({"Idempotency-Key": key} if key else {})}
    request = urllib.request.Request(os.environ["CRASHLAB_TRACKER_URL"] + path, json.dumps(payload).encode(), headers)
    with urllib.request.urlopen(request, timeout=30) as answer:
        return json.load(answer)["number"]


def main(keyed: bool) -> None:
    db = sqlite3.connect("progress.sqlite", isolation_level=None)
    db.execute("pragma journal_mode=wal")
    db.execute("pragma synchronous=full")
    db.execute("create table if not exists run (id text)")
    db.execute("create table if not exists done (step text primary key, number integer)")
    if db.execute("select id from run").fetchone() is None:
        db.execute("insert into run values (?)", (uuid.uuid4().hex,))
    run = db.execute("select id from run").fetchone()[0]
    done = dict(db.execute("select step, number from done").fetchall())
    for step, kind, text in STEPS:
        if step in done:
            continue
        key = f"{run}:{step}" if keyed else None
        if kind == "issue":
            done[step] = post("/issues", {"title": text, "body": ""}, key)
        else:
            done[step] = post(f"/issues/{done['A']}/comments", {"body": text}, key)
        db.execute("insert into done values (?, ?)", (step, done[step]))
    db.close()


if __name__ == "__main__":
    main(keyed="--keyed" in sys.argv[1:])
