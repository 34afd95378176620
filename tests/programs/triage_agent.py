"""An agent as people ship one: a program, run as ``python triage_agent.py [--keyed]``, that knows nothing of crashlab.

It files two issues and comments on the first through the issue service at ``CRASHLAB_TRACKER_URL``,
keeping its progress in ``progress.json`` in its working directory (replaced whole, with fsyncs, after
each step). With ``--keyed`` each request carries an ``Idempotency-Key`` made of the run's ID and the
step, the run's ID saved before any request carries it. It imports nothing but the standard library.
"""

import json
import os
import sys
import urllib.request
import uuid
from pathlib import Path

STEPS = [("A", "issue", "Login fails on Safari"), ("B", "issue", "Export times out"),
         ("C", "comment", "Same root cause as the export timeout")]
PROGRESS = Path("progress.json")


def post(path: str, payload: dict, key: str | None) -> int:
    headers = {"Content-Type": "application/json", **({"Idempotency-Key": key} if key else {})}
    request = urllib.request.Request(os.environ["CRASHLAB_TRACKER_URL"] + path, json.dumps(payload).encode(), headers)
    with urllib.request.urlopen(request, timeout=30) as answer:
        return json.load(answer)["number"]


def save(progress: dict) -> None:
    temporary = PROGRESS.with_suffix(".tmp")
    with open(temporary, "w") as file:
        json.dump(progress, file)
        file.flush()
        os.fsync(file.fileno())
    os.replace(temporary, PROGRESS)
    folder = os.open(".", os.O_RDONLY)
    try:
        os.fsync(folder)
    finally:
        os.close(folder)


def main(keyed: bool) -> None:
    if PROGRESS.exists():
        progress = json.loads(PROGRESS.read_text())
    else:
        progress = {"run": uuid.uuid4().hex, "done": {}}
        save(progress)
    done = progress["done"]
    for step, kind, text in STEPS:
        if step in done:
            continue
        key = f"{progress['run']}:{step}" if keyed else None
        if kind == "issue":
            done[step] = post("/issues", {"title": text, "body": ""}, key)
        else:
            done[step] = post(f"/issues/{done['A']}/comments", {"body": text}, key)
        save(progress)


if __name__ == "__main__":
    main(keyed="--keyed" in sys.argv[1:])
